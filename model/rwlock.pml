/* rwlock: the read/write lock of issue 46 (DESIGN.md "Primitives beyond
 * one lock"), checked exhaustively. See model/README.md ("Read/write
 * locks") for what it proves and its bounds.
 *
 * One resource. The registry keeps each holder's mode and its own lease
 * (ticks left), one FIFO queue of waiters with the mode each asks for,
 * and the last writer's fence; the gate keeps highestFence. Every client
 * operation and every clock tick is one store transaction (one atomic
 * step). Time: a Clock ticks while anyone holds; a lease of TTL ticks
 * ends at its own expiry unless its holder renews it (RNMAX renewals per
 * hold). A holder may crash (CRASHES per run): it stops, its lease runs
 * out. A holder whose lease ended learns it at its next call. The gate's
 * proof freshness (fencegate.pml) is abstracted: a grant is proven HELD
 * while the registry holds it in that mode.
 *
 * Configurations (R: a reader, W: a writer that may downgrade):
 *   default       c0 R, c1 R, c2 W
 *   -DTWOW        c0 R, c1 W, c2 W
 *   -DBIG         c0 R, c1 R, c2 W, c3 W
 *
 * The rule (correct model): a new reader is granted if no writer holds
 * and no one waits; a new writer if no one holds and no one waits;
 * otherwise the request joins the FIFO queue. Each transaction that
 * ends a hold (release, expiry, downgrade) grants from the head of the
 * queue: every reader up to the first writer while no writer holds, or
 * the writer at the head once no one holds. A reader's grant carries the
 * last writer's fence; a writer's grant the next fence. A downgrade is
 * one transaction: the holder's mode becomes READ with its fence kept. */

#include "cover.pml"

#define NONE 7
#define NOF 255      /* no fence (no grant) */
#define RD 1
#define WR 2

#if defined(BIG)
#define NC 4
#define ISW(c) ((c) >= 2)
#elif defined(TWOW)
#define NC 3
#define ISW(c) ((c) >= 1)
#else
#define NC 3
#define ISW(c) ((c) == 2)
#endif

#ifndef TTL
#define TTL 2        /* lease TTL in ticks */
#endif
#ifndef RNMAX
#define RNMAX 1      /* renewals per hold */
#endif
#ifndef CRASHES
#define CRASHES 1    /* holders crashing per run */
#endif

mtype = { IDLE, WAITING, HELD, DOWNGRADING, DEAD };
mtype cs[NC];        /* the client's state, as its Session sees it */
byte want[NC];       /* the mode c asks for (RD, WR) */
byte gm[NC];         /* client: the mode of c's current grant */
byte gf[NC];         /* client: the fence c's current grant carries (NOF: none) */
bit  sent[NC];       /* client: a mutation sent in this hold */
byte rn[NC];         /* client: renewals in this hold */

byte md[NC];         /* registry: c's mode as holder (0: not a holder) */
byte ex[NC];         /* registry: ticks left of c's own lease */
byte wq[NC];         /* registry: waiters in FIFO order, NONE after the last */
byte F;              /* registry: the last writer's fence (0: none yet) */
byte H;              /* gate: highestFence */
byte crashes;

/* ghosts */
byte deadFor[NC];    /* ticks since c crashed, while the registry still has it as a holder */
bit  dg[NC];         /* mutant DOWNGRADE2STEP: between its two steps */
byte df[NC];         /* the fence c held as a writer before its downgrade (NOF: none) */

#ifdef NOHIDDEN
#define hidden
#endif
hidden byte i, k, rk, mn, dl, hd, hw;
hidden byte writerNotAlone, readerPastWriter, writerInDowngrade, fenceLost, outlivesTTL, readerMutation;

#ifdef NOASSERT
#define PROP(p) skip
#else
#define PROP(p) assert(!(p))
#endif

#define ISWRITER(c) (md[c] == WR)
#define ANYWRITER (md[0] == WR || md[1] == WR || md[2] == WR || NC > 3 && md[3 % NC] == WR)
#define ANYHOLDER (md[0] != 0 || md[1] != 0 || md[2] != 0 || NC > 3 && md[3 % NC] != 0)
#define ANYWRITERQUEUED (want[wq[0] % NC] == WR && wq[0] != NONE || want[wq[1] % NC] == WR && wq[1] != NONE || \
                         want[wq[2] % NC] == WR && wq[2] != NONE || NC > 3 && want[wq[3 % NC] % NC] == WR && wq[3 % NC] != NONE)

inline enq(c) {
  i = 0;
#ifdef MUTANT_WRITERJUMP
  /* strict writer priority: a writer goes ahead of every queued reader */
  if
  :: want[c] == WR ->
     do
     :: wq[i] != NONE && want[wq[i]] == WR -> i++
     :: else -> break
     od;
     k = NC - 1;
     do
     :: k > i -> wq[k] = wq[k - 1]; k--
     :: else -> break
     od;
     wq[i] = c; k = 0
  :: else ->
#endif
  do
  :: wq[i] == NONE -> wq[i] = c; break
  :: else -> i++
  od
#ifdef MUTANT_WRITERJUMP
  fi
#endif
  ; i = 0
}

inline popHead() {
  i = 0;
  do
  :: i < NC - 1 -> wq[i] = wq[i + 1]; i++
  :: else -> break
  od;
  wq[NC - 1] = NONE;
  i = 0
}

/* the registry grants c its mode: a writer the next fence, a reader the
 * last writer's; the properties of a grant are checked here */
inline grant(c) {
  if
  :: want[c] == WR ->
     F = F + 1;
     printf("ev c%d granted WRITE fence %d\n", c, F);
     k = 0;
     do
     :: k < NC -> writerInDowngrade = writerInDowngrade || dg[k]; k++
     :: else -> break
     od;
#ifndef FENCEONLY
     PROP(writerInDowngrade)
#else
     skip   /* -DFENCEONLY: the mutant is checked for fenceLost alone */
#endif
  :: else ->
     printf("ev c%d granted READ (the last writer's fence %d)\n", c, F)
  fi;
  md[c] = want[c]; ex[c] = TTL;
  gm[c] = want[c]; gf[c] = F; sent[c] = 0; rn[c] = 0;
  cs[c] = HELD;
  if
  :: dg[c] -> fenceLost = (gf[c] != df[c]); PROP(fenceLost); dg[c] = 0; df[c] = NOF
  :: else -> skip
  fi
}

/* a new request: granted at once if compatible, else queued */
inline acquire(c) {
  if
#ifdef MUTANT_READERPREF
  :: want[c] == RD && !ANYWRITER ->
#else
  :: want[c] == RD && !ANYWRITER && wq[0] == NONE ->
#endif
     readerPastWriter = ANYWRITERQUEUED; PROP(readerPastWriter);
     if :: ANYHOLDER -> REACH(1) :: else -> skip fi;   /* readers share */
     grant(c)
#ifdef MUTANT_WRITERBESIDE
  :: want[c] == WR && !ANYWRITER && wq[0] == NONE -> grant(c)
#else
  :: want[c] == WR && !ANYHOLDER && wq[0] == NONE -> grant(c)
#endif
  :: else ->
     if :: want[c] == RD && !ANYWRITER -> REACH(2) :: else -> skip fi; /* a reader held back by a queued writer */
     cs[c] = WAITING; enq(c);
     printf("ev c%d waits (mode %d)\n", c, want[c])
  fi
}

/* grant from the head of the queue: readers up to the first writer while
 * no writer holds, or the head writer once no one holds */
inline grantQueue() {
  do
  :: wq[0] != NONE && want[wq[0]] == RD && !ANYWRITER ->
     hd = wq[0]; popHead(); grant(hd)
  :: wq[0] != NONE && want[wq[0]] == WR && !ANYHOLDER ->
     hd = wq[0]; popHead();
     REACH(3);   /* a queued writer served */
     grant(hd); break
  :: else -> break
  od;
  hd = 0
}

/* the properties after every step */
inline check() {
  k = 0; hw = 0;
  do
  :: k < NC ->
     if :: md[k] == WR -> hw = hw + 1 :: else -> skip fi;
     k++
  :: else -> break
  od;
  writerNotAlone = (hw > 1 || hw == 1 && (md[0] == RD || md[1] == RD || md[2] == RD || NC > 3 && md[3 % NC] == RD));
  PROP(writerNotAlone);
  k = 0; hw = 0
}

/* rank the fences still compared (the registry's, the gate's, the
 * grants' and a downgrade's saved one) keeping their order and
 * equalities: only comparisons and "the next fence" matter, so runs
 * differing in the fences' values but not in their order are one state */
#define LOWER(v) if :: (v) != NOF && (v) >= rk && (v) < mn -> mn = (v) :: else -> skip fi
#define SHIFT(v) if :: (v) != NOF && (v) >= mn -> v = v - dl :: else -> skip fi
inline canon() {
  rk = 0;
  do
  :: true ->
     mn = NOF;
     LOWER(F); LOWER(H);
     k = 0;
     do
     :: k < NC -> LOWER(gf[k]); LOWER(df[k]); k++
     :: else -> break
     od;
     if
     :: mn == NOF -> break
     :: else ->
        dl = mn - rk;
        if
        :: dl > 0 ->
           SHIFT(F); SHIFT(H);
           k = 0;
           do
           :: k < NC -> SHIFT(gf[k]); SHIFT(df[k]); k++
           :: else -> break
           od
        :: else -> skip
        fi;
        rk++
     fi
  od;
  rk = 0; mn = 0; dl = 0; k = 0
}

/* the gate decides one mutation under c's current grant */
inline mutate(c) {
  sent[c] = 1;
  if
#ifndef MUTANT_GATENOMODE
  :: gm[c] == RD -> REACH(4); printf("ev gate: c%d's read grant refused as a mutation (READ_GRANT)\n", c)
#endif
  :: md[c] != gm[c] -> printf("ev gate: c%d NOT_HELD\n", c)       /* no fresh proof */
  :: md[c] == gm[c] && gf[c] < H -> printf("ev gate: c%d STALE_OWNER\n", c)
  :: else ->
     readerMutation = (gm[c] == RD); PROP(readerMutation);
     H = gf[c];
     printf("ev gate: c%d ACCEPTED at fence %d\n", c, H)
  fi
}

proctype Client(byte c) {
  do
  :: d_step { cs[c] == IDLE -> want[c] = (ISW(c) -> WR : RD); acquire(c); canon(); check() }
  :: d_step { cs[c] == HELD ->
       printf("ev c%d releases\n", c);
       if :: md[c] != 0 -> md[c] = 0; ex[c] = 0; grantQueue() :: else -> skip fi;
       cs[c] = IDLE; gf[c] = NOF; gm[c] = 0; canon(); check() }
  :: d_step { cs[c] == HELD && rn[c] < RNMAX ->
       rn[c]++;
       if
       :: md[c] != 0 ->
          printf("ev c%d renews\n", c);
#ifdef MUTANT_SHAREDLEASE
          /* one lease for all readers: any reader's renewal renews every reader's share */
          if
          :: md[c] == RD -> k = 0;
             do
             :: k < NC -> if :: md[k] == RD -> ex[k] = TTL :: else -> skip fi; k++
             :: else -> break
             od;
             k = 0
          :: else -> ex[c] = TTL
          fi
#else
          ex[c] = TTL   /* its own lease only */
#endif
       :: else -> printf("ev c%d learns its lease ended\n", c); cs[c] = IDLE; gf[c] = NOF; gm[c] = 0; canon()
       fi;
       check() }
  :: d_step { cs[c] == HELD && !sent[c] -> mutate(c); canon(); check() }
  :: d_step { cs[c] == HELD && gm[c] == WR && md[c] == WR ->
       printf("ev c%d downgrades\n", c);
       if :: ANYWRITERQUEUED -> REACH(5) :: else -> skip fi;   /* a writer queued at the downgrade */
#ifdef MUTANT_DOWNGRADE2STEP
       /* release the write, then ask for a read */
       dg[c] = 1; df[c] = gf[c];
       md[c] = 0; ex[c] = 0; gm[c] = 0; gf[c] = NOF;
       grantQueue();
       cs[c] = DOWNGRADING;
#else
       md[c] = RD; gm[c] = RD;   /* the fence is kept, the lease too */
       grantQueue();
       if :: md[0] == RD && md[1] == RD -> REACH(6) :: else -> skip fi;  /* a queued reader joined the downgrader */
#endif
       canon(); check() }
#ifdef MUTANT_DOWNGRADE2STEP
  :: d_step { cs[c] == DOWNGRADING -> want[c] = RD; acquire(c); canon(); check() }
#endif
  :: d_step { cs[c] == HELD && md[c] != 0 && crashes < CRASHES ->
       crashes++; cs[c] = DEAD; printf("ev c%d crashes holding\n", c); check() };
     break
  od
}

/* one tick: every holder's own lease loses a tick; a lease at 0 ends
 * (the registry frees it at once and grants from the queue) */
proctype Clock() {
  do
  :: d_step { ANYHOLDER ->
       k = 0;
       do
       :: k < NC ->
          if
          :: md[k] != 0 ->
             if :: cs[k] == DEAD -> deadFor[k]++ :: else -> skip fi;
             outlivesTTL = (deadFor[k] > TTL); PROP(outlivesTTL);
             ex[k]--;
             if
             :: ex[k] == 0 -> md[k] = 0; deadFor[k] = 0; printf("ev c%d's lease expires\n", k);
                if :: cs[k] == DEAD -> REACH(7) :: else -> skip fi
             :: else -> skip
             fi
          :: else -> skip
          fi;
          k++
       :: else -> break
       od;
       grantQueue(); canon(); check() }
  od
}

init {
  atomic {
    k = 0;
    do
    :: k < NC -> wq[k] = NONE; gf[k] = NOF; df[k] = NOF; cs[k] = IDLE; k++
    :: else -> break
    od;
    k = 0;
    do
    :: k < NC -> run Client(k); k++
    :: else -> break
    od;
    k = 0;
    run Clock()
  }
}

#ifdef LIVE
/* No starvation either way: under weak fairness (pan -a -f), every
 * waiter, reader or writer, is eventually granted. */
#define SERVED(c) (cs[c] == WAITING -> <> (cs[c] == HELD))
#if NC > 3
ltl fair { [] (SERVED(0) && SERVED(1) && SERVED(2) && SERVED(3)) }
#else
ltl fair { [] (SERVED(0) && SERVED(1) && SERVED(2)) }
#endif
#endif
