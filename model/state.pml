/* Global state of the model: the registry's store record, the grants
 * issued, the clients, the writes in flight, the gate's per-resource
 * state, and ghost variables that only the properties read. */

unsigned T : 5;      /* true time */
unsigned goff : 2;   /* gate clock offset, 0 or M */

/* registry.Record of the one resource, as kept in the store (etcd). A
 * holder is live while the reading replica's clock is below expires; an
 * expired holder stays in the record until overwritten, as Normalize
 * would end it on the next write (registry/lockstate/state.go). e[c]: the
 * request-ID index, client c's last granted request number and grant. */
/* one request-ID index entry per client */
typedef Entry { unsigned rq : 2; unsigned rg : 3 }

typedef Rec {
  unsigned highest : 4;  /* HighestFence: last fence allocated */
  unsigned floor : 4;    /* Floor (POST /v1/admin/floor) */
  unsigned holder : 3;   /* grant index; NONE after a release */
  unsigned expires : 5;  /* holder's ExpiresAtMs */
  unsigned freeAt : 5;   /* FreeAtMs (set by a release) */
  Entry e[NC];
}
Rec rec;

/* lockGrant.v1 as issued: fence, owner, request number (owner and
 * request number name the operation root), IssuedAt stamp (the issuing
 * replica's clock). The index is the grant's digest. */
typedef Grant {
  unsigned fence : 4;
  unsigned owner : 2;
  unsigned rq : 2;
  unsigned stamp : 5;
  unsigned ttl : 3;      /* TTLMs */
  unsigned maxExp : 5;   /* latest ExpiresAtMs its holder record had (until a restore) */
  unsigned postResume : 1; /* ghost: issued after an operator resume */
  unsigned acc : 3;      /* the gate's receipts: bit seq-1 = segment seq accepted under this grant */
}
Grant grants[G];
byte gN;

/* client lease states (client/state.go). RENEWING is the inside of one
 * atomic renew step; IDLE is a client between attempts (or done). A
 * client keeps the latest HELD statement it received while HELD: s =
 * issuedAt, v = validUntil (0: none), regr = ghost (see issueStatus). */
mtype = { IDLE, REQUESTED, HELD, UNKNOWN, EXPIRED, RELEASED };
typedef Lease {
  mtype state = IDLE;
  unsigned rq : 2;       /* current request number (1..RQMAX; RQMAX+1: done) */
  unsigned ttl : 3;      /* the TTL this attempt asks for (part of the request) */
  unsigned g : 3 = NONE; /* grant of the current lease */
  unsigned s : 5;
  unsigned v : 5;
  unsigned regr : 1;
  unsigned next : 3;     /* next segment number to send */
  unsigned rn : 2;       /* renewals sent in this attempt */
}
Lease cl[NC];

/* Writes in flight to the gate, each packed by MSG (grant, statement,
 * segment), sorted descending, 0 = empty slot: a set, so two runs with
 * the same writes in flight are one state whatever the order of sending. */
typedef Msg { unsigned w : 16 }
Msg net[NET];

/* gate.State of the resource (enforce mode). */
unsigned H : 4;       /* HighestFence */
unsigned gH : 3 = NONE; /* GrantDigest accepted under H */
unsigned lastSeq : 2;  /* LastSegmentSeq */
unsigned tH : 5;       /* GrantIssuedAt of gH */
unsigned F : 4;        /* Floor stated at the last resume (0: never) */
unsigned tF : 5;       /* FloorAt: gate clock at that resume */
unsigned paused : 1;

/* faults injected so far: lost registry answers and lost writes */
unsigned faults : 2;

/* ghosts */
unsigned maxIssued : 4; /* highest fence the registry ever issued (a restore does not lower it) */
unsigned reissued : 1; /* the registry issued a fence not above one it had issued */
unsigned restored : 1;
unsigned resumed : 1;
unsigned maxAcc : 4;   /* highest fence ever accepted by the gate */
unsigned accG : 3 = NONE; /* the grant first accepted at maxAcc */

#ifdef RANGE
/* Fence ranges. sgen: Settings.FenceGeneration in the store (a restore
 * takes it back with the rest of the snapshot). seen[r]: the highest
 * generation registry replica r has read (Registry.genSeen: a restore
 * does not lower it). clk: the generation the bumper's clock reads (Unix
 * seconds, abstracted: it only rises, and a bump that waited for its
 * generation leaves it above). */
unsigned sgen : 3;
byte seen[2];
unsigned clk : 3;
unsigned bumps : 2;    /* bumps so far */
/* ghosts */
unsigned served : 1;   /* the restored store answered a registry request */
unsigned healed : 1;   /* a bump after the restore */
unsigned rb : 1;       /* a bump after the restore before the restored store served anything */
unsigned genBack : 1;  /* the restore took the store's generation back (a snapshot from before a bump) */
unsigned genMax : 3;   /* highest generation any store has had */
#endif

/* scratch variables of one d_step (hidden: not part of the state; a
 * d_step never backtracks halfway, so they need no saving). Breadth-first
 * search refuses hidden variables: -DNOHIDDEN keeps them in the state. */
#ifdef NOHIDDEN
#define hidden
#endif
hidden byte tnow, g, i, j, f, s, v, tg, seq, prior, out, why, alm, hBefore, tHBefore;
hidden byte vs, vv, vr;   /* the statement issueStatus just signed */
hidden byte fresh, justified, qregr, atFence, regr;
hidden byte refused;  /* RANGE: this replica refused to sign (checkGeneration) */
hidden byte ng;       /* RANGE: the generation a bump decides */
hidden int m;
/* the properties, named so that a trail says which one failed */
hidden byte staleAccept, notMonotone, spuriousPause, missedRegression;
hidden byte reissuedAfterBump, staleHeldAfterBump, pauseAfterBump;
