/* The registry's operator and environment: one restore of the store from
 * an earlier snapshot (etcd snapshot restore: fences, holder and request
 * index go back; replica clocks do not; restoreTo), and the FENCE_REGRESSION runbook
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
  :: d_step { !restored -> restoreTo(0, 0, 0); canonClients() }
#if G >= 1
  :: d_step { !restored && gN >= 1 -> restoreTo(1, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 1 -> restoreTo(1, 1, 0); canonClients() }
  :: d_step { !restored && gN >= 1 -> restoreTo(1, 1, 1); canonClients() }
#endif
#if G >= 2
  :: d_step { !restored && gN >= 2 -> restoreTo(2, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 2 -> restoreTo(2, 1, 0); canonClients() }
  :: d_step { !restored && gN >= 2 -> restoreTo(2, 1, 1); canonClients() }
#endif
#if G >= 3
  :: d_step { !restored && gN >= 3 -> restoreTo(3, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 3 -> restoreTo(3, 1, 0); canonClients() }
  :: d_step { !restored && gN >= 3 -> restoreTo(3, 1, 1); canonClients() }
#endif
#if G >= 4
  :: d_step { !restored && gN >= 4 -> restoreTo(4, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 4 -> restoreTo(4, 1, 0); canonClients() }
  :: d_step { !restored && gN >= 4 -> restoreTo(4, 1, 1); canonClients() }
#endif
#if G >= 5
  :: d_step { !restored && gN >= 5 -> restoreTo(5, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 5 -> restoreTo(5, 1, 0); canonClients() }
  :: d_step { !restored && gN >= 5 -> restoreTo(5, 1, 1); canonClients() }
#endif
#if G >= 6
  :: d_step { !restored && gN >= 6 -> restoreTo(6, 0, 0); canonClients() }
  :: d_step { !restored && gN >= 6 -> restoreTo(6, 1, 0); canonClients() }
  :: d_step { !restored && gN >= 6 -> restoreTo(6, 1, 1); canonClients() }
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
