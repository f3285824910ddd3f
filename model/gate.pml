/* The gate: gate.Decide (gate/decide.go) in enforce mode, with the
 * regression rule of the brief, as one atomic step per delivered write,
 * and the properties checked on every decision. */

/* outcomes */
#define O_ACCEPTED 1
#define O_REPLAYED 2
#define O_PAUSED   3   /* RESOURCE_PAUSED */
#define O_STALE    4   /* STALE_OWNER */
#define O_REGRESS  5   /* FENCE_REGRESSION: alm + pause */
#define O_NOTHELD  6   /* NOT_HELD / PROOF_EXPIRED */
#define O_GAP      7   /* SEGMENT_GAP */
/* why a FENCE_REGRESSION */
#define W_FLOOR 1      /* below the resumed floor, grant issued after the resume */
#define W_TWO   2      /* two grants, one fence */
#define W_LATE  3      /* lower fence, HELD statement issued > m after tH */
#define W_QUERY 4      /* lower fence, ambiguous, the querier said HELD */
#define W_OLD   5      /* mutant: the old pause-on-any-lower-HELD rule */
#define W_HIGHER 6     /* higher fence, grant issued more than m before tH */
/* alm rows */
#define A_NONE      0
#define A_REGRESS   1
#define A_SUSPECTED 2  /* REGRESSION_SUSPECTED: STALE_OWNER, no pause */

#define ROOT(x) (grants[x].owner * (RQMAX + 1) + grants[x].rq)

/* the receipt stored at (f, seq), from whichever grant: prior */
inline receiptAt(f, seq) {
  prior = NONE;
  i = 0;
  do
  :: i < gN ->
     if
     :: grants[i].fence == f && (grants[i].acc & (1 << (seq - 1))) != 0 -> prior = i
     :: else -> skip
     fi;
     i++
  :: else -> break
  od
}

/* Rule 5 (belowFloor): a fence at or below the resumed floor. */
inline belowFloor() {
  if
  :: tg > tF + M -> out = O_REGRESS; why = W_FLOOR
  :: tg + M <= tF -> out = O_STALE; REACH(12)
  :: else -> out = O_STALE; alm = A_SUSPECTED; REACH(13)
  fi
}

/* Rule 7 (lowerFence): f < H with a fresh HELD statement issued at s. */
inline lowerFence() {
#ifdef MUTANT_OLDRULE
  out = O_REGRESS; why = W_OLD
#elif defined(MUTANT_NOALARM)
  out = O_STALE   /* mutant: a lower fence is always an ordinary STALE_OWNER */
#else
  if
  :: s > tH + M -> out = O_REGRESS; why = W_LATE
  :: s + M <= tH -> out = O_STALE
  :: else ->
#ifdef QUERIER
     /* StatusQuerier with the row locked: the slowest replica, the one
      * that says HELD longest (the worst case for a spurious pause) */
     if
     :: LIVE(g, RNOW(0)) -> out = O_REGRESS; why = W_QUERY; qregr = (grants[g].fence < maxIssued)
     :: else -> out = O_STALE
     fi
#else
     out = O_STALE; alm = A_SUSPECTED
#endif
  fi
#endif
}

/* decideFence: rules 5-9 for a write that is neither a replay nor paused. */
inline decideFence() {
#ifdef MUTANT_NOFENCE
  /* mutant: no fence check, accept any grant proven HELD */
  if :: fresh -> out = O_ACCEPTED :: else -> out = O_NOTHELD fi
#else
  if
  :: F > 0 && f <= F -> belowFloor()
  :: else ->
     atFence = 1;
     if
     :: (f == H && gH != NONE && (g != gH || ROOT(g) != ROOT(gH))) || prior != NONE ->
        out = O_REGRESS; why = W_TWO
     :: else ->
        if
        :: f < H ->
           if :: !fresh -> out = O_STALE :: else -> lowerFence() fi
        /* gate.higherFenceIssuedBefore: a fence above H under a grant
         * issued more than m before the grant at H (tg + m < tH) is
         * FENCE_REGRESSION, whatever the status. -DMUTANT_HIGHER_AT_BOUND
         * pauses at exactly m too (tg + m <= tH), which two replicas'
         * clocks m apart produce in a consistent history. */
#ifdef MUTANT_HIGHER_AT_BOUND
        :: f > H && gH != NONE && tg + M <= tH -> out = O_REGRESS; why = W_HIGHER
#else
        :: f > H && gH != NONE && tg + M < tH -> out = O_REGRESS; why = W_HIGHER
#endif
        :: else ->
           if
           :: !fresh -> out = O_NOTHELD
           :: f > H && seq == 1 -> out = O_ACCEPTED
           :: f == H && seq == lastSeq + 1 -> out = O_ACCEPTED
           :: else -> out = O_GAP
           fi
        fi
     fi
  fi
#endif
}

/* the decision, for trails (printed only in simulation and replay) */
inline logDecision() {
  printf("T%d gate (clock %d) decides write g%d fence %d seg %d s=%d v=%d, state H %d tH %d F %d tF %d: ",
    T, GNOW, g, f, seq, s, v, hBefore, tHBefore, F, tF);
  if
  :: out == O_ACCEPTED -> printf("ACCEPTED\n")
  :: out == O_REPLAYED -> printf("REPLAYED\n")
  :: out == O_PAUSED -> printf("RESOURCE_PAUSED\n")
  :: out == O_STALE && alm == A_SUSPECTED -> printf("STALE_OWNER + REGRESSION_SUSPECTED alarm\n")
  :: out == O_STALE && alm != A_SUSPECTED -> printf("STALE_OWNER\n")
  :: out == O_NOTHELD -> printf("NOT_HELD (proof not fresh)\n")
  :: out == O_GAP -> printf("SEGMENT_GAP\n")
  :: out == O_REGRESS && why == W_FLOOR -> printf("FENCE_REGRESSION, paused (below floor, granted after the resume)\n")
  :: out == O_REGRESS && why == W_TWO -> printf("FENCE_REGRESSION, paused (two grants, one fence)\n")
  :: out == O_REGRESS && why == W_LATE -> printf("FENCE_REGRESSION, paused (lower fence, HELD issued more than m after tH)\n")
  :: out == O_REGRESS && why == W_QUERY -> printf("FENCE_REGRESSION, paused (lower fence, the querier says HELD)\n")
  :: out == O_REGRESS && why == W_OLD -> printf("FENCE_REGRESSION, paused (old rule: lower fence proven HELD)\n")
  :: out == O_REGRESS && why == W_HIGHER -> printf("FENCE_REGRESSION, paused (higher fence, grant issued at least m before tH)\n")
  :: else -> skip
  fi
}

/* gate.Decide for the write x (a MSG), then the properties. */
inline decide(x) {
  g = M_G(x);
  seq = M_SEQ(x);
  s = M_S(x);
  v = M_V(x);
  regr = M_REGR(x);
  f = grants[g].fence;
  tg = grants[g].stamp;
  fresh = (GNOW + M < v);   /* StatusEvidence.judge: HELD, now + skew < validUntil */
  hBefore = H;
  tHBefore = tH;
  receiptAt(f, seq);
  out = 0; why = 0; alm = A_NONE; qregr = 0; atFence = 0;
  if
  :: prior == g -> out = O_REPLAYED; REACH(6)
  :: else ->
     if
     :: paused -> out = O_PAUSED
     :: else -> decideFence()
     fi
  fi;
  logDecision();
  checkAndApply()
}

inline checkAndApply() {
  if
  :: out == O_ACCEPTED ->
     /* P1 no stale accept: never below (or beside, from another grant)
      * a fence already accepted */
     staleAccept = (f < maxAcc || (f == maxAcc && accG != NONE && g != accG));
     assert(!staleAccept);
     H = f; gH = g; lastSeq = seq; tH = tg;
     grants[g].acc = grants[g].acc | (1 << (seq - 1));
     if :: f > maxAcc -> maxAcc = f; accG = g :: else -> skip fi;
     if :: restored && F > 0 -> REACH(7) :: else -> skip fi;
#ifdef RANGE
     /* a write under a grant of the current range accepted after a
      * restore and a bump before serving (14), when that restore took
      * the generation back (16) */
     if :: rb && GENOF(f) == sgen -> REACH(14) :: else -> skip fi;
     if :: rb && genBack && GENOF(f) == sgen -> REACH(16) :: else -> skip fi;
#endif
     skip
  :: out == O_REGRESS ->
     alm = A_REGRESS;
     paused = 1;
     /* P3 no spurious pause: a pause only in a run with a restore, and
      * only on evidence that the registry really went backwards */
     justified = (why == W_TWO && reissued) || (why == W_LATE && regr) ||
                 (why == W_QUERY && qregr) || (why == W_FLOOR && grants[g].postResume) ||
                 (why == W_OLD && regr) || (why == W_HIGHER && reissued);
     spuriousPause = !(restored && justified);
     assert(!spuriousPause);
     if :: why == W_LATE -> REACH(1) :: why == W_TWO -> REACH(2) :: why == W_QUERY -> REACH(10) :: else -> skip fi;
#ifdef RANGE
     /* (a) a restore, then a bump before the restored store served
      * anything: no FENCE_REGRESSION pause at all */
     pauseAfterBump = rb;
     assert(!pauseAfterBump);
     /* (b) a restore from before a bump and no bump since: caught */
     if :: genBack && !healed -> REACH(17) :: else -> skip fi;
#endif
     skip
  :: else -> skip
  fi;
  /* P2 highestFence monotone; a rejection leaves it unchanged */
  notMonotone = !(H >= hBefore && (out == O_ACCEPTED || H == hBefore));
  assert(!notMonotone);
  /* P4 a real regression reaching the fence step with a fresh HELD
   * statement issued more than m after tH is alarmed */
  missedRegression = (atFence && f < hBefore && fresh && regr && s > tHBefore + M && alm != A_REGRESS);
  assert(!missedRegression);
  if :: alm == A_SUSPECTED -> REACH(3) :: else -> skip fi;
  if :: out == O_STALE && f < hBefore && fresh && alm == A_NONE -> REACH(4) :: else -> skip fi;
  if :: F > 0 && f <= F && out != O_PAUSED && out != O_REPLAYED -> REACH(5) :: else -> skip fi
}

/* The gate's delivery loop: one write in flight is decided (consumed or
 * kept as a duplicate) or lost. */
#define DELIVER(jj) \
  :: d_step { net[jj].w != 0 -> m = net[jj].w; netRemove(jj); decide(m) } \
  :: d_step { net[jj].w != 0 -> m = net[jj].w; printf("(a copy stays in the network)\n"); decide(m) } \
  :: d_step { net[jj].w != 0 && faults < FAULTS -> faults++; \
       printf("T%d write g%d seg %d lost\n", T, M_G(net[jj].w), M_SEQ(net[jj].w)); netRemove(jj) }

proctype Gate() {
end:
  do
  DELIVER(0)
#if NET >= 2
  DELIVER(1)
#endif
#if NET >= 3
  DELIVER(2)
#endif
  od
}
