/* The registry core (registry/lockstate) as inlines over the store record.
 * Each runs inside one client step (client.pml) as one linearizable store
 * transaction at replica r, whose clock is RNOW(r); the client may lose
 * the answer. */

/* registry/lockstate/state.go StatusValidUntil for a HELD statement. */
#define VALID_UNTIL(tn, exp) max(min((tn) + PTTL, (exp) - M), (tn))

/* EntryState == HELD: the record's live holder is grant gg at tn. */
#define LIVE(gg, tn) ((gg) != NONE && rec.holder == (gg) && (tn) < rec.expires)

/* DecideAcquire's "free" after Normalize: no live holder and lock-delay
 * over (an expiry frees at expires + LD, a release at freeAt). */
#define FREE(tn) (!LIVE(rec.holder, tn) && \
  (tn) >= (rec.holder != NONE -> max(rec.freeAt, rec.expires + LD) : rec.freeAt))

#ifdef RANGE
/* nextFence (registry/lockstate/fencerange.go): max(HighestFence, Floor,
 * generation<<32) + 1, the floor and the range composing by max; a fence
 * past the range's last counter is refused (FENCE_RANGE) until a bump. */
#ifdef MUTANT_NOGENBASE
#define NEXTFENCE max(rec.highest, rec.floor) + 1   /* mutant: the range's start is not a base */
#else
#define NEXTFENCE max(max(rec.highest, rec.floor), sgen * RK) + 1
#endif
#define FENCE_OK (NEXTFENCE <= sgen * RK + RK - 1)
#else
#define NEXTFENCE max(rec.highest, rec.floor) + 1
#define FENCE_OK 1
#endif

/* readSettings(r): a registry operation at replica r reads the settings
 * with its record. checkGeneration: a replica that has read a higher
 * generation than the store now has refuses to sign (refused); then
 * Registry.genSeen takes the store's. Without RANGE nothing is refused. */
inline readSettings(r) {
#ifdef RANGE
  refused = (sgen < seen[r]);
  seen[r] = max(seen[r], sgen);
  if :: restored && !healed -> served = 1 :: else -> skip fi
#else
  skip
#endif
}

/* canonSeen: after the restore (there is one) the store's generation
 * only rises, so a replica that has read no more than it never refuses
 * again and its next read takes the store's: seen[r] = sgen then, one
 * state for all such values. */
inline canonSeen() {
#ifdef RANGE
  if :: restored && seen[0] < sgen -> seen[0] = sgen :: else -> skip fi;
  if :: restored && seen[1] < sgen -> seen[1] = sgen :: else -> skip fi
#else
  skip
#endif
}

/* endOldRange: Normalize's endsWithBump, applied at once to the record
 * rather than at its next write: a holder whose fence is from a
 * generation below the store's ends (EXPIRED, broken), free at once (no
 * lock-delay: the fence keeps its writes out). */
inline endOldRange() {
#if defined(RANGE) && !defined(MUTANT_BUMPKEEPS)
  if
  :: rec.holder != NONE && GENOF(grants[rec.holder].fence) < sgen ->
     if :: LIVE(rec.holder, RNOW(0)) -> REACH(15) :: else -> skip fi;
     printf("T%d the holder g%d (fence %d) is from a generation below %d: ended\n", T, rec.holder, grants[rec.holder].fence, sgen);
     rec.holder = NONE; rec.expires = 0; rec.freeAt = 0
  :: else -> skip
  fi
#else
  skip
#endif
}

/* issueStatus: Registry.issue signs "gg is HELD" at tn, valid until
 * StatusValidUntil, into (vs, vv, vr). vr is the ghost "issued when a
 * fence above gg's had already been issued": a statement only a registry
 * that went backwards can sign. */
inline issueStatus(gg, tn) {
  vs = tn;
  vv = VALID_UNTIL(tn, rec.expires);
  vr = (grants[gg].fence < maxIssued);
#ifdef RANGE
  /* (a) after a bump that followed the restore, no HELD statement about
   * a grant below a fence already issued (a bump ended every such lease) */
  staleHeldAfterBump = (healed && !refused && vr);
#ifndef GATEPROPS
  assert(!staleHeldAfterBump);
#endif
#endif
  /* already stale at the gate: the one stale statement (forgetPast) */
  if :: vv <= T + goff + M -> vs = 0; vv = 1; vr = 0 :: else -> skip fi
}

/* grantLease (registry/lockstate/acquire.go): the next fence is
 * max(HighestFence, Floor) + 1 (with RANGE, NEXTFENCE), recorded with the
 * holder and the request entry in the same write; then its HELD
 * statement. That statement is the grant's own (lockGrant.v1 heldUntil,
 * registry.heldUntilMs: issued at the grant's issuedAt, valid until
 * StatusValidUntil of it) or, in the earlier form
 * (Config.SeparateStatus), a grantStatus.v1 signed with it: the same
 * (issuedAt, validUntil) either way, so the model covers both. */
inline grantLease(c, tn) {
  /* non-vacuity: a grant after a release (8), after an expiry (9) */
  if
  :: rec.holder == NONE && rec.highest > 0 -> REACH(8)
  :: rec.holder != NONE -> REACH(9)
  :: else -> skip
  fi;
  grants[gN].fence = NEXTFENCE;
  grants[gN].owner = c;
  grants[gN].rq = cl[c].rq;
  grants[gN].stamp = tn;
  grants[gN].ttl = cl[c].ttl;
  grants[gN].postResume = resumed;
  /* guarantee 1: without a restore the registry's fences only rise */
  assert(grants[gN].fence > maxIssued || restored);
#ifdef RANGE
  /* (a) after a bump that followed the restore, every fence is above
   * every fence any store issued before */
  reissuedAfterBump = (healed && grants[gN].fence <= maxIssued);
#ifndef GATEPROPS
  assert(!reissuedAfterBump);   /* -DGATEPROPS: only what the gate sees (mutant trails) */
#endif
#endif
  if
  :: grants[gN].fence <= maxIssued -> reissued = 1
  :: else -> maxIssued = grants[gN].fence
  fi;
  rec.highest = grants[gN].fence;
  rec.holder = gN;
  rec.freeAt = 0;   /* only read while there is no holder */
  rec.expires = tn + cl[c].ttl;
  grants[gN].maxExp = (restored -> 0 : rec.expires);
  rec.e[c].rq = cl[c].rq;
  rec.e[c].rg = gN;
  g = gN;
  gN++;
  issueStatus(g, tn)
}

#ifdef RANGE
#define RESTOREGEN(jj, hi) ((hi) -> ((jj) < gN -> GENOF(grants[(jj) % G].fence) : sgen) : \
                                    ((jj) > 0 -> GENOF(grants[((jj) + G - 1) % G].fence) : 0))
#endif

/* restoreTo(jj, hold, late): the store goes back to a snapshot taken
 * while grant jj-1 was the last one issued (jj = 0: before any grant).
 * Fences above its fence and the request entries of later grants are
 * forgotten; the holder is grant jj-1 with the expiry it was issued with
 * (hold, late = 0) or its last renewed one (late = 1), or nobody (a
 * snapshot taken after its release). Clocks are not restored. Before any
 * resume the floor is 0 and fences rise in grant order (1, 2, 3, ...
 * without RANGE), so these are the records the store can have held,
 * chosen at restore time instead of carried along as a snapshot copy.
 * With RANGE the snapshot also holds the settings' generation: the one
 * grant jj-1 was issued in (hi = 0), or, when a bump came between grant
 * jj-1 and the snapshot, the one grant jj was issued in (the store's
 * current one if there is no grant jj) (hi = 1); jj = 0, hi = 0 is also
 * a switch to a new, empty store. Registry replicas keep the generation
 * they have read (genSeen); the clock keeps its. */
inline restoreTo(jj, hold, late, hi) {
  rec.highest = (jj > 0 -> grants[jj - 1].fence : 0);
  rec.floor = 0;
  rec.freeAt = 0;
  if
  :: hold -> rec.holder = jj - 1;
     rec.expires = (late -> grants[jj - 1].maxExp : grants[jj - 1].stamp + grants[jj - 1].ttl)
  :: else -> rec.holder = NONE; rec.expires = 0
  fi;
  rec.e[0].rq = 0; rec.e[1].rq = 0;
  rec.e[0].rg = NONE; rec.e[1].rg = NONE;
#if NC > 2
  rec.e[2].rq = 0; rec.e[2].rg = NONE;
#endif
  i = 0;
  do
  :: i < jj -> rec.e[grants[i].owner].rq = grants[i].rq; rec.e[grants[i].owner].rg = i; i++
  :: else -> break
  od;
  /* maxExp was only needed to choose the snapshot: forget it */
  i = 0;
  do
  :: i < gN -> grants[i].maxExp = 0; i++
  :: else -> break
  od;
  restored = 1;
#ifdef RANGE
  /* the snapshot's generation: the one grant jj-1 was issued in (lo), or
   * the one grant jj was (hi: a bump came between) or the store's now */
  sgen = RESTOREGEN(jj, hi);
  genBack = (sgen < genMax);
  endOldRange();
  canonSeen();
#endif
  printf("T%d RESTORE: the store goes back to after grant %d (highest fence %d, holder g%d expires %d)\n", T, jj, rec.highest, rec.holder, rec.expires)
}

/* forgetPast: what the passing of time makes irrelevant, cleared so that
 * runs differing only in it are one state. A freeAt every clock has
 * passed frees nothing more; a holder expired past its lock-delay at every
 * replica is the same as none; a statement whose validUntil the gate's
 * clock has reached can never prove HELD again, and then its issuedAt and
 * ghost are never read (rules 5 and 6 do not look at the status): it
 * becomes the one stale statement (s 0, v 1). */
#define STALE_V(vx) ((vx) != 0 && (vx) <= T + goff + M)
#define STALE_MSG(x) (STALE_V(M_V(x)) && !(M_V(x) == 1 && M_S(x) == 0 && M_REGR(x) == 0))
inline forgetPast() {
  if :: rec.freeAt <= T -> rec.freeAt = 0 :: else -> skip fi;
  if
  :: rec.holder != NONE && rec.expires + LD <= T -> rec.holder = NONE; rec.expires = 0
  :: else -> skip
  fi;
  i = 0;
  do
  :: i < NC ->
     if :: STALE_V(cl[i].v) && cl[i].v != 1 -> cl[i].s = 0; cl[i].v = 1; cl[i].regr = 0 :: else -> skip fi;
     i++
  :: else -> break
  od;
  i = 0;
  do
  :: i < NET ->
     if
     :: net[i].w != 0 && STALE_MSG(net[i].w) ->
        m = MSG(M_G(net[i].w), 0, 1, 0, M_SEQ(net[i].w));
        netRemove(i);
        if :: !IN_NET(m) -> netInsert(m) :: else -> skip fi;
        i = 0   /* the set re-sorted: look again from the start */
     :: else -> i++
     fi
  :: else -> break
  od;
  skip
}
