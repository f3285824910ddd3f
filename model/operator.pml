/* The operator's fence-range bump (-DRANGE, issue 28), then the
 * Operator process: a restore, the bump, the FENCE_REGRESSION runbook. */
#ifdef RANGE
/* BUMPGEN(r, above, fast): the generation lockstate.DecideBump takes: the highest
 * of the store's + 1, the clock's (the bumper's clock reads clk, or clk +
 * 1 when it is fast by up to the skew bound across a second's edge), the
 * one above the gate's highest fence (above: --above), and, for a bump by
 * registry replica r (r < 2; r = 2 is a bump on the store directly,
 * before serve starts), the one above what r has read. */
#ifdef MUTANT_NOCLOCK
#define CLOCKGEN(fast) 0   /* mutant: the clock is not a term */
#else
#define CLOCKGEN(fast) (clk + (fast))
#endif
#define BUMPGEN(r, above, fast) max(max(sgen + 1, CLOCKGEN(fast)), \
  max(ABOVEGEN(above), (r) < 2 -> max(seen[(r) % 2], sgen) + 1 : 0))
/* above 1: --above the gate's highest fence; above 2 (-DEXP_AHEAD): --above
 * a fence from a range further ahead of the clock than a bump waits out
 * (another store's range, a clock that ran ahead) */
#define ABOVEGEN(above) ((above) == 1 -> GENOF(H) + 1 : ((above) == 2 -> clk + WAITGENS + 1 : 0))

/* bump(r, above, fast): Registry.BumpFenceRange (r < 2) or the store-
 * direct BumpFenceRange (r = 2): the settings' generation rises to ng in
 * one write; every lease granted below it ends (endOldRange); the bump
 * returns once every clock has passed its generation (waitForGeneration)
 * when that is at most WAITGENS ahead of the clock, else at once. */
inline bump(r, above, fast) {
  ng = BUMPGEN(r, above, fast);
  if
  :: r < 2 -> printf("T%d BUMP by replica %d (above %d, fast clock %d): generation %d -> %d, clock %d\n", T, r, above, fast, sgen, ng, clk)
  :: else -> printf("T%d BUMP on the store (above %d, fast clock %d): generation %d -> %d, clock %d\n", T, above, fast, sgen, ng, clk)
  fi;
  if :: r < 2 -> seen[(r) % 2] = ng :: else -> skip fi;
  sgen = ng;
  genMax = max(genMax, ng);
  bumps++;
  if :: ng <= clk + WAITGENS -> clk = max(clk, ng + 1) :: else -> skip fi;
  endOldRange();
  if :: restored && !healed -> healed = 1; rb = !served :: else -> skip fi;
  canonSeen()
}
#define BUMP(r, above, fast) \
  :: d_step { BUMPABLE && BUMPGEN(r, above, fast) <= GENMAX -> bump(r, above, fast); canonClients() }
/* at most BUMPS bumps in all, of which one before the restore and one
 * after it (enough for a restore from before a bump followed by a bump),
 * unless -DBUMPSFREE */
#ifdef BUMPSFREE
#define BUMPABLE (bumps < BUMPS)
#else
#define BUMPABLE (bumps < BUMPS && (restored -> !healed : bumps == 0))
#endif
#endif

/* The registry's operator and environment: one restore of the store from
 * an earlier snapshot (etcd snapshot restore: fences, holder and request
 * index go back; replica clocks do not; restoreTo), with RANGE fence-range
 * bumps (bump), and the FENCE_REGRESSION runbook
 * of docs/operations.md: raise the registry floor to highestFence + 1,
 * then gate.Resume with that floor (Floor = max(Floor, floor), FloorAt =
 * gate clock: gate.Resume). */
proctype Operator() {
end:
  do
#ifdef EXP_NORESUME
  :: d_step { T > 200 -> skip }
#endif
#ifndef EXP_NOSNAP
  :: d_step { !restored -> restoreTo(0, 0, 0, 0); canonClients() }
#ifdef RANGE
  :: d_step { !restored && RESTOREGEN(0, 1) != RESTOREGEN(0, 0) -> restoreTo(0, 0, 0, 1); canonClients() }
#endif
#if G >= 1
  :: d_step { !restored && gN >= 1 -> restoreTo(1, 0, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 1 -> restoreTo(1, 1, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 1 -> restoreTo(1, 1, 1, 0); canonClients() }
#ifdef RANGE
  :: d_step { !restored && gN >= 1 && RESTOREGEN(1, 1) != RESTOREGEN(1, 0) -> restoreTo(1, 0, 0, 1); canonClients() }
  :: d_step { !restored && gN >= 1 && RESTOREGEN(1, 1) != RESTOREGEN(1, 0) -> restoreTo(1, 1, 0, 1); canonClients() }
  :: d_step { !restored && gN >= 1 && RESTOREGEN(1, 1) != RESTOREGEN(1, 0) -> restoreTo(1, 1, 1, 1); canonClients() }
#endif
#endif
#if G >= 2
  :: d_step { !restored && gN >= 2 -> restoreTo(2, 0, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 2 -> restoreTo(2, 1, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 2 -> restoreTo(2, 1, 1, 0); canonClients() }
#ifdef RANGE
  :: d_step { !restored && gN >= 2 && RESTOREGEN(2, 1) != RESTOREGEN(2, 0) -> restoreTo(2, 0, 0, 1); canonClients() }
  :: d_step { !restored && gN >= 2 && RESTOREGEN(2, 1) != RESTOREGEN(2, 0) -> restoreTo(2, 1, 0, 1); canonClients() }
  :: d_step { !restored && gN >= 2 && RESTOREGEN(2, 1) != RESTOREGEN(2, 0) -> restoreTo(2, 1, 1, 1); canonClients() }
#endif
#endif
#if G >= 3
  :: d_step { !restored && gN >= 3 -> restoreTo(3, 0, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 3 -> restoreTo(3, 1, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 3 -> restoreTo(3, 1, 1, 0); canonClients() }
#ifdef RANGE
  :: d_step { !restored && gN >= 3 && RESTOREGEN(3, 1) != RESTOREGEN(3, 0) -> restoreTo(3, 0, 0, 1); canonClients() }
  :: d_step { !restored && gN >= 3 && RESTOREGEN(3, 1) != RESTOREGEN(3, 0) -> restoreTo(3, 1, 0, 1); canonClients() }
  :: d_step { !restored && gN >= 3 && RESTOREGEN(3, 1) != RESTOREGEN(3, 0) -> restoreTo(3, 1, 1, 1); canonClients() }
#endif
#endif
#if G >= 4
  :: d_step { !restored && gN >= 4 -> restoreTo(4, 0, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 4 -> restoreTo(4, 1, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 4 -> restoreTo(4, 1, 1, 0); canonClients() }
#ifdef RANGE
  :: d_step { !restored && gN >= 4 && RESTOREGEN(4, 1) != RESTOREGEN(4, 0) -> restoreTo(4, 0, 0, 1); canonClients() }
  :: d_step { !restored && gN >= 4 && RESTOREGEN(4, 1) != RESTOREGEN(4, 0) -> restoreTo(4, 1, 0, 1); canonClients() }
  :: d_step { !restored && gN >= 4 && RESTOREGEN(4, 1) != RESTOREGEN(4, 0) -> restoreTo(4, 1, 1, 1); canonClients() }
#endif
#endif
#if G >= 5
  :: d_step { !restored && gN >= 5 -> restoreTo(5, 0, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 5 -> restoreTo(5, 1, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 5 -> restoreTo(5, 1, 1, 0); canonClients() }
#ifdef RANGE
  :: d_step { !restored && gN >= 5 && RESTOREGEN(5, 1) != RESTOREGEN(5, 0) -> restoreTo(5, 0, 0, 1); canonClients() }
  :: d_step { !restored && gN >= 5 && RESTOREGEN(5, 1) != RESTOREGEN(5, 0) -> restoreTo(5, 1, 0, 1); canonClients() }
  :: d_step { !restored && gN >= 5 && RESTOREGEN(5, 1) != RESTOREGEN(5, 0) -> restoreTo(5, 1, 1, 1); canonClients() }
#endif
#endif
#if G >= 6
  :: d_step { !restored && gN >= 6 -> restoreTo(6, 0, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 6 -> restoreTo(6, 1, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 6 -> restoreTo(6, 1, 1, 0); canonClients() }
#ifdef RANGE
  :: d_step { !restored && gN >= 6 && RESTOREGEN(6, 1) != RESTOREGEN(6, 0) -> restoreTo(6, 0, 0, 1); canonClients() }
  :: d_step { !restored && gN >= 6 && RESTOREGEN(6, 1) != RESTOREGEN(6, 0) -> restoreTo(6, 1, 0, 1); canonClients() }
  :: d_step { !restored && gN >= 6 && RESTOREGEN(6, 1) != RESTOREGEN(6, 0) -> restoreTo(6, 1, 1, 1); canonClients() }
#endif
#endif
#endif
#ifdef RANGE
  BUMP(0, 0, 0) BUMP(1, 0, 0) BUMP(2, 0, 0)
#ifdef EXP_AHEAD
  BUMP(2, 2, 0)
#endif
#ifdef BUMPVARIANTS
  BUMP(0, 0, 1) BUMP(0, 1, 0) BUMP(0, 1, 1)
  BUMP(1, 0, 1) BUMP(1, 1, 0) BUMP(1, 1, 1)
  BUMP(2, 0, 1) BUMP(2, 1, 0) BUMP(2, 1, 1)
#endif
#endif
#ifndef EXP_NORESUME
  :: d_step { paused ->
       rec.floor = max(rec.floor, H + 1);
       F = max(F, H + 1); tF = GNOW; paused = 0; resumed = 1;
       printf("T%d operator: registry floor %d, gate.Resume(floor %d) at gate clock %d\n", T, rec.floor, F, tF) }
#endif
  od
}

/* The true clock. */
proctype Clock() {
end:
  do
#ifdef EXP_NORESUME
  :: d_step { T > 200 -> skip }
#endif
  :: d_step { T < TMAX -> T++; forgetPast(); printf("--- T = %d\n", T) }
  od
}
