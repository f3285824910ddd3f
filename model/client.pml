/* Three clients running the lease state machine of client/state.go
 * against the registry core, every registry answer possibly lost. A
 * client writes only while HELD (State.Certain), with the latest HELD
 * statement it holds, as Lease.Envelope does; writes already sent stay
 * in the network whatever the client does next (a paused process, a
 * retry queue). */

/* the client takes the statement just signed (vs, vv, vr) */
inline takeStatus(c) {
  cl[c].s = vs; cl[c].v = vv; cl[c].regr = vr
}

/* leaving HELD: a client sends only while HELD, and every way back to
 * HELD brings a new statement, so the old one is forgotten */
inline leaveHeld(c, to) {
  cl[c].state = to; cl[c].s = 0; cl[c].v = 0; cl[c].regr = 0
}

/* a lease ended (EXPIRED or RELEASED, terminal): with no attempt left the
 * client is done at once (one state, not one per way of ending) */
inline endLease(c, to) {
  if
  :: cl[c].rq >= RQMAX -> j = 0; newAttempt(c, j)
  :: else -> leaveHeld(c, to)
  fi
}

inline becomeHeld(c, gg) {
  if
  :: cl[c].g != gg -> cl[c].next = 1
  :: else -> skip
  fi;
  cl[c].state = HELD;
  cl[c].g = gg;
  takeStatus(c)
}

/* Session.begin / answered: a new attempt draws a fresh request ID; it
 * asks for TTL tt (AcquireRequest.TTLMs). */
inline newAttempt(c, tt) {
  if
  :: cl[c].rq < RQMAX -> cl[c].rq++; cl[c].state = REQUESTED; cl[c].ttl = tt
  :: else -> cl[c].state = IDLE; cl[c].rq = RQMAX + 1; cl[c].ttl = 0   /* out of attempts: done */
  fi;
  cl[c].g = NONE; cl[c].s = 0; cl[c].v = 0; cl[c].regr = 0; cl[c].next = 0; cl[c].rn = 0
}

/* Registry.Acquire (lockstate.DecideAcquire) answered to Session.Acquire: a
 * retried request ID gets its existing grant (outExisting) with its
 * current state, a free resource a new grant (outGranted), a busy one
 * nothing (the client keeps its ID and tries again). */
inline acquire(c, r, lost) {
  tnow = RNOW(r);
  readSettings(r);
  if
  :: rec.e[c].rq == cl[c].rq && rec.e[c].rg != NONE ->
     g = rec.e[c].rg;
     if
     :: LIVE(g, tnow) ->
        issueStatus(g, tnow);
        printf("T%d client %d acquire retry at replica %d: existing grant g%d HELD, statement s=%d v=%d lost=%d\n", T, c, r, g, vs, vv, lost);
        if :: !lost && !refused -> becomeHeld(c, g) :: refused -> REACH(18) :: else -> skip fi
     :: else ->
        printf("T%d client %d acquire retry at replica %d: grant g%d has ended lost=%d\n", T, c, r, g, lost);
        if :: !lost && !refused -> j = cl[c].ttl; newAttempt(c, j) :: else -> skip fi   /* ended: answered, a fresh ID */
     fi
  :: else ->
     if
     :: FREE(tnow) && gN < G && FENCE_OK ->
        grantLease(c, tnow);
        printf("T%d client %d acquire at replica %d: GRANTED g%d fence %d issuedAt %d expires %d, statement s=%d v=%d lost=%d\n", T, c, r, g, grants[g].fence, tnow, rec.expires, vs, vv, lost);
        if
        :: !lost && !refused -> becomeHeld(c, g)
        :: lost -> faults++   /* EvAcquireLost */
        :: else -> REACH(18)  /* committed, not signed (checkGeneration): the client retries its ID */
        fi
     :: else -> skip
     fi
  fi
}

/* Lease renewal (lockstate.DecideRenew): HELD -> RENEWING -> HELD | UNKNOWN | EXPIRED. */
inline renew(c, r, lost) {
  cl[c].rn++;
  tnow = RNOW(r);
  readSettings(r);
  g = cl[c].g;
  if
  :: LIVE(g, tnow) ->
     rec.expires = max(rec.expires, tnow + grants[g].ttl);
     if :: !restored -> grants[g].maxExp = rec.expires :: else -> skip fi;
     issueStatus(g, tnow);
     printf("T%d client %d renew g%d at replica %d: expires %d, statement s=%d v=%d lost=%d\n", T, c, g, r, rec.expires, vs, vv, lost);
     if
     :: !lost && !refused -> takeStatus(c)
     :: lost -> faults++; leaveHeld(c, UNKNOWN)
     :: else -> REACH(18); leaveHeld(c, UNKNOWN)   /* an error, not an answer (checkGeneration) */
     fi
  :: else ->
     printf("T%d client %d renew g%d at replica %d: refused, lease over lost=%d\n", T, c, g, r, lost);
     if :: !lost -> endLease(c, EXPIRED) :: else -> faults++; leaveHeld(c, UNKNOWN) fi
  fi
}

/* Lease.Release (lockstate.DecideRelease): frees the resource at once. */
inline release(c, r, lost) {
  tnow = RNOW(r);
  readSettings(r);
  g = cl[c].g;
  if
  :: LIVE(g, tnow) ->
     rec.holder = NONE;
     rec.expires = 0;
     rec.freeAt = max(rec.freeAt, tnow);
     printf("T%d client %d release g%d at replica %d: released lost=%d\n", T, c, g, r, lost);
     if :: !lost -> endLease(c, RELEASED) :: else -> faults++; leaveHeld(c, UNKNOWN) fi
  :: else ->
     if :: !lost -> endLease(c, EXPIRED) :: else -> faults++; leaveHeld(c, UNKNOWN) fi
  fi
}

/* DecideRelease with a waiter queued: handOff grants the freed resource
 * to the head waiter k in the same store write (grantLease, the next
 * fence, k's request entry). k is any client whose current request has
 * no grant yet: a REQUESTED client may have queued (Acquire with a wait),
 * and which of them heads the queue is left open. k learns of its grant
 * by its next acquire of the same request ID (outHanded / outExisting). */
#define HANDABLE(c, k, r) (RELEASABLE(c) && LIVE(cl[c].g, RNOW(r)) && gN < G && FENCE_OK && \
  cl[k].state == REQUESTED && !(rec.e[k].rq == cl[k].rq && rec.e[k].rg != NONE))
inline releaseHandOff(c, k, r, lost) {
  tnow = RNOW(r);
  readSettings(r);
  printf("T%d client %d release g%d at replica %d: released lost=%d, handed off to client %d\n", T, c, cl[c].g, r, lost, k);
  rec.holder = NONE;
  rec.expires = 0;
  rec.freeAt = max(rec.freeAt, tnow);
  REACH(11);
  grantLease(k, tnow);
  printf("T%d   handOff: GRANTED g%d fence %d to client %d, expires %d\n", T, g, grants[g].fence, k, rec.expires);
  if :: !lost -> endLease(c, RELEASED) :: else -> faults++; leaveHeld(c, UNKNOWN) fi
}

/* OWNERSHIP_UNKNOWN asks about the same grant (Registry.Status);
 * a lost answer changes nothing. */
inline query(c, r) {
  tnow = RNOW(r);
  readSettings(r);
  g = cl[c].g;
  if
  :: refused -> REACH(18); printf("T%d client %d status query g%d at replica %d: refused (FENCE_RANGE)\n", T, c, g, r)
  :: !refused && LIVE(g, tnow) -> issueStatus(g, tnow); cl[c].state = HELD; takeStatus(c);
     printf("T%d client %d status query g%d at replica %d: HELD, statement s=%d v=%d\n", T, c, g, r, vs, vv)
  :: !refused && !LIVE(g, tnow) -> endLease(c, EXPIRED);
     printf("T%d client %d status query g%d at replica %d: not held\n", T, c, g, r)
  fi
}

/* Lease.Envelope(k, digest) sent: segment k (the next one, or a retry of
 * an earlier one) with the latest statement, unless that very write is
 * already in flight, and if the network has room. */
#define CMSG(c, k) MSG(cl[c].g, cl[c].s, cl[c].v, cl[c].regr, k)
#define CAN_SEND(c, k) (cl[c].state == HELD && (k) <= cl[c].next && (k) <= SEQMAX && \
  net[NET - 1].w == 0 && !IN_NET(CMSG(c, k)))
inline send(c, k) {
  printf("T%d client %d sends write g%d segment %d with statement s=%d v=%d\n", T, c, cl[c].g, k, cl[c].s, cl[c].v);
  netInsert(CMSG(c, k));
  if :: k == cl[c].next -> cl[c].next++ :: else -> skip fi
}

#define TERMINAL(c) (cl[c].state == EXPIRED || cl[c].state == RELEASED || \
  (cl[c].state == IDLE && cl[c].rq == 0))
#define RENEWABLE(c) (cl[c].state == HELD && cl[c].rn < RNMAX)
#define RELEASABLE(c) (cl[c].state == HELD || cl[c].state == UNKNOWN)

proctype Client(byte c) {
end:
  do
  :: d_step { TERMINAL(c) -> newAttempt(c, TTL); canonClients() }
#if TTLS > 0
  :: d_step { TERMINAL(c) -> newAttempt(c, TTLS); canonClients() }
#endif
  :: d_step { cl[c].state == REQUESTED -> acquire(c, 0, 0); canonClients() }
  :: d_step { cl[c].state == REQUESTED -> acquire(c, 1, 0); canonClients() }
  :: d_step { cl[c].state == REQUESTED && faults < FAULTS -> acquire(c, 0, 1); canonClients() }
  :: d_step { cl[c].state == REQUESTED && faults < FAULTS -> acquire(c, 1, 1); canonClients() }
  :: d_step { RENEWABLE(c) -> renew(c, 0, 0); canonClients() }
  :: d_step { RENEWABLE(c) -> renew(c, 1, 0); canonClients() }
  :: d_step { RENEWABLE(c) && faults < FAULTS -> renew(c, 0, 1); canonClients() }
  :: d_step { RENEWABLE(c) && faults < FAULTS -> renew(c, 1, 1); canonClients() }
  :: d_step { RELEASABLE(c) -> release(c, 0, 0); canonClients() }
  :: d_step { RELEASABLE(c) -> release(c, 1, 0); canonClients() }
  :: d_step { RELEASABLE(c) && faults < FAULTS -> release(c, 0, 1); canonClients() }
  :: d_step { RELEASABLE(c) && faults < FAULTS -> release(c, 1, 1); canonClients() }
#ifndef NOHANDOFF
  :: d_step { HANDABLE(c, (c + 1) % NC, 0) -> releaseHandOff(c, (c + 1) % NC, 0, 0); canonClients() }
  :: d_step { HANDABLE(c, (c + 1) % NC, 1) -> releaseHandOff(c, (c + 1) % NC, 1, 0); canonClients() }
  :: d_step { HANDABLE(c, (c + 2) % NC, 0) -> releaseHandOff(c, (c + 2) % NC, 0, 0); canonClients() }
  :: d_step { HANDABLE(c, (c + 2) % NC, 1) -> releaseHandOff(c, (c + 2) % NC, 1, 0); canonClients() }
  :: d_step { HANDABLE(c, (c + 1) % NC, 0) && faults < FAULTS -> releaseHandOff(c, (c + 1) % NC, 0, 1); canonClients() }
  :: d_step { HANDABLE(c, (c + 1) % NC, 1) && faults < FAULTS -> releaseHandOff(c, (c + 1) % NC, 1, 1); canonClients() }
  :: d_step { HANDABLE(c, (c + 2) % NC, 0) && faults < FAULTS -> releaseHandOff(c, (c + 2) % NC, 0, 1); canonClients() }
  :: d_step { HANDABLE(c, (c + 2) % NC, 1) && faults < FAULTS -> releaseHandOff(c, (c + 2) % NC, 1, 1); canonClients() }
#endif
  :: d_step { cl[c].state == UNKNOWN -> query(c, 0); canonClients() }
  :: d_step { cl[c].state == UNKNOWN -> query(c, 1); canonClients() }
  :: d_step { CAN_SEND(c, 1) -> send(c, 1); canonClients() }
#if SEQMAX >= 2
  :: d_step { CAN_SEND(c, 2) -> send(c, 2); canonClients() }
#endif
#if SEQMAX >= 3
  :: d_step { CAN_SEND(c, 3) -> send(c, 3); canonClients() }
#endif
  od
}
