/* lockset: the all-or-nothing acquire of lock sets (issue 46,
 * DESIGN.md "Primitives beyond one lock"), checked exhaustively. See
 * model/README.md ("Lock sets") for what it proves and its bounds.
 *
 * The registry's view only: which client holds each resource, and one
 * FIFO waiter queue per resource. Every client operation is one store
 * transaction (one atomic step). Fences, grants and gates are left out:
 * each member of a set gets an ordinary grant on its resource, which the
 * one-resource model (fencegate.pml) proves.
 *
 * Configurations (clients named by their sets, members in the order the
 * caller names them):
 *   default  c0 = [r0 r1], c1 = [r1 r0] (the order that deadlocks a
 *            lock-by-lock MultiLock), c2 = [r0], c3 = [r1]
 *   -DCYCLE  c0 = [r0 r1], c1 = [r1 r2], c2 = [r2 r0], c3 = [r1]
 *   -DBIG    c0 = [r0 r1 r2], c1 = [r2 r1], c2 = [r1 r0], c3 = [r0], c4 = [r2]
 * Clients loop forever: acquire, wait if they must, hold, release; a
 * holder's lease may expire at any moment (one lease for the set, as one
 * renewal transaction renews every member); a waiter may give up (its
 * deadline), CANCELS times per run.
 *
 * The rule (correct model): an acquire takes every member at once if
 * every member is free and no one waits on any member; otherwise it
 * enqueues on every member in the same transaction and holds nothing.
 * A waiter is granted, every member at once, when it is at the head of
 * every member's queue and every member is free; each transaction that
 * frees a resource or removes a waiter (release, expiry, cancel) grants
 * the head of each touched queue that has become eligible. */

#include "cover.pml"

#define NONE 7

#if defined(BIG)
#define NR 3
#define NC 5
#define M1(c) ((c) == 0 -> 0 : ((c) == 1 -> 2 : ((c) == 2 -> 1 : ((c) == 3 -> 0 : 2))))
#define M2(c) ((c) == 0 -> 1 : ((c) == 1 -> 1 : ((c) == 2 -> 0 : NONE)))
#define M3(c) ((c) == 0 -> 2 : NONE)
#elif defined(CYCLE)
#define NR 3
#define NC 4
#define M1(c) ((c) == 0 -> 0 : ((c) == 1 -> 1 : ((c) == 2 -> 2 : 1)))
#define M2(c) ((c) == 0 -> 1 : ((c) == 1 -> 2 : ((c) == 2 -> 0 : NONE)))
#define M3(c) NONE
#else
#define NR 2
#define NC 4
#define M1(c) ((c) == 0 -> 0 : ((c) == 1 -> 1 : ((c) == 2 -> 0 : 1)))
#define M2(c) ((c) == 0 -> 1 : ((c) == 1 -> 0 : NONE))
#define M3(c) NONE
#endif
/* member j (0, 1, 2) of c's set in naming order, NONE past the last */
#define MEM(c, j) ((j) == 0 -> M1(c) : ((j) == 1 -> M2(c) : ((j) == 2 -> M3(c) : NONE)))
#define SIZE(c) (M2(c) == NONE -> 1 : (M3(c) == NONE -> 2 : 3))

#ifndef CANCELS
#define CANCELS 1    /* waiters giving up (a deadline) per run */
#endif

mtype = { IDLE, WAITING, HELD };
mtype st[NC];              /* the client's state, as its Session sees it */
byte hold[NR];             /* registry: the client holding each resource, or NONE */
typedef Queue { byte w[NC] }
Queue q[NR];               /* registry: each resource's waiters in FIFO order, NONE after the last */
byte cancels;
#if defined(MUTANT_PARTIAL) || defined(MUTANT_SPLITENQ)
byte step[NC];             /* mutants: members taken or enqueued so far, in naming order */
#define HALF(c) (step[c] < SIZE(c))
#else
#define HALF(c) 0
#endif

/* scratch variables of one atomic step (hidden: not part of the state;
 * breadth-first search refuses them, -DNOHIDDEN keeps them in it) */
#ifdef NOHIDDEN
#define hidden
#endif
hidden byte i, j1, j2, m1, m2, k, x, y, nh;
hidden byte waiterHolds, partialHold;

#ifdef NOASSERT
#define PROP(p) skip
#else
#define PROP(p) assert(!(p))
#endif

/* client c holds resource r at the registry */
#define HOLDS(c, r) ((r) != NONE && hold[r] == (c))
#define NHELD(c) ((HOLDS(c, M1(c)) -> 1 : 0) + (HOLDS(c, M2(c)) -> 1 : 0) + (HOLDS(c, M3(c)) -> 1 : 0))

/* the head of r's queue may take r: r is free and c is first in line */
#define FREEFOR(c, r) ((r) == NONE -> 1 : (hold[r] == NONE && q[r].w[0] == (c)))
#define ELIGIBLE(c) (!HALF(c) && FREEFOR(c, M1(c)) && FREEFOR(c, M2(c)) && FREEFOR(c, M3(c)))
/* a new acquire may take r: free and no one waiting (barging mutant: free) */
#ifdef MUTANT_BARGE
#define OPEN(r) ((r) == NONE -> 1 : hold[r] == NONE)
#else
#define OPEN(r) ((r) == NONE -> 1 : (hold[r] == NONE && q[r].w[0] == NONE))
#endif
#define ANYFREE(c) (M1(c) != NONE && hold[M1(c)] == NONE || M2(c) != NONE && hold[M2(c)] == NONE || M3(c) != NONE && hold[M3(c)] == NONE)

inline enq(r, c) {
  i = 0;
  do
  :: q[r].w[i] == NONE -> q[r].w[i] = c; break
  :: else -> i++
  od;
  i = 0
}

/* remove c from r's queue (if there), keeping the order of the rest */
inline deq(r, c) {
  i = 0;
  do
  :: i < NC && q[r].w[i] != c -> i++
  :: else -> break
  od;
  if
  :: i < NC ->
     do
     :: i < NC - 1 -> q[r].w[i] = q[r].w[i + 1]; i++
     :: else -> break
     od;
     q[r].w[NC - 1] = NONE
  :: else -> skip
  fi;
  i = 0
}

/* every member of c's set to c, out of every queue, in one step */
inline grantSet(c) {
  j2 = 0;
  do
  :: j2 < SIZE(c) -> m2 = MEM(c, j2); hold[m2] = c; deq(m2, c); j2++
  :: else -> break
  od;
  j2 = 0;
  st[c] = HELD;
  printf("ev c%d granted its set of %d\n", c, SIZE(c))
}

/* hand r to the head of its queue if that waiter is now eligible */
inline handoff(r) {
  if
  :: r != NONE && q[r].w[0] != NONE ->
     y = q[r].w[0];
#ifdef MUTANT_PARTIAL
     /* the MultiLock way: r goes to its first waiter, whatever else it waits for */
     if
     :: hold[r] == NONE ->
        hold[r] = y; deq(r, y);
        printf("ev r%d handed to c%d\n", r, y);
        if :: NHELD(y) == SIZE(y) -> st[y] = HELD :: else -> skip fi
     :: else -> skip
     fi
#else
     if
     :: ELIGIBLE(y) ->
        if :: SIZE(y) > 1 -> REACH(1) :: else -> skip fi;
        grantSet(y)
     :: else -> skip
     fi
#endif
  :: else -> skip
  fi
}

/* free every member c holds, then hand each one off */
inline freeAll(c) {
  j1 = 0;
  do
  :: j1 < SIZE(c) -> m1 = MEM(c, j1); if :: HOLDS(c, m1) -> hold[m1] = NONE :: else -> skip fi; j1++
  :: else -> break
  od;
  j1 = 0;
  do
  :: j1 < SIZE(c) -> m1 = MEM(c, j1); handoff(m1); j1++
  :: else -> break
  od;
  j1 = 0
}

/* the properties, after every transaction: a waiter holds nothing; a
 * client not waiting holds all of its set or none of it, and a client
 * that believes it holds the set holds all of it */
inline check() {
  k = 0;
  do
  :: k < NC ->
     nh = NHELD(k);
     waiterHolds = (st[k] == WAITING && nh > 0);
     PROP(waiterHolds);
     partialHold = (st[k] != WAITING && nh > 0 && nh < SIZE(k) || st[k] == HELD && nh < SIZE(k));
     PROP(partialHold);
     k++
  :: else -> break
  od;
  /* non-vacuity: two clients hold at once */
  if :: hold[0] != NONE && hold[1] != NONE && hold[0] != hold[1] -> REACH(5) :: else -> skip fi;
  k = 0; nh = 0; waiterHolds = 0; partialHold = 0
}

/* Registry.Acquire of c's set in one transaction */
inline acquire(c) {
#ifdef MUTANT_PARTIAL
  st[c] = WAITING; step[c] = 0; takeNext(c)
#else
  if
  :: OPEN(M1(c)) && OPEN(M2(c)) && OPEN(M3(c)) -> grantSet(c)
  :: else ->
     /* non-vacuity: a set waiting with a member free (and holding
      * nothing); a single-resource client queued behind a waiter on its
      * free resource (no barging past a set) */
     if :: SIZE(c) > 1 && ANYFREE(c) -> REACH(6) :: else -> skip fi;
     if :: SIZE(c) == 1 && hold[M1(c)] == NONE -> REACH(2) :: else -> skip fi;
     st[c] = WAITING;
     printf("ev c%d waits\n", c);
#ifdef MUTANT_SPLITENQ
     /* the queues one member at a time, in naming order */
     step[c] = 1; enq(M1(c), c)
#else
     j1 = 0;
     do
     :: j1 < SIZE(c) -> m1 = MEM(c, j1); enq(m1, c); j1++
     :: else -> break
     od;
     j1 = 0
#endif
  fi
#endif
}

#ifdef MUTANT_PARTIAL
/* the MultiLock way: take the next member if it is free, else wait on it */
inline takeNext(c) {
  x = MEM(c, step[c]);
  step[c]++;
  if
  :: hold[x] == NONE && q[x].w[0] == NONE -> hold[x] = c; printf("ev c%d takes r%d\n", c, x)
  :: else -> enq(x, c); printf("ev c%d waits for r%d\n", c, x)
  fi;
  if :: NHELD(c) == SIZE(c) -> st[c] = HELD :: else -> skip fi
}
#endif

proctype Client(byte c) {
  do
  :: d_step { st[c] == IDLE -> acquire(c); check() }
#ifdef MUTANT_PARTIAL
  :: d_step { st[c] == WAITING && step[c] < SIZE(c) && NHELD(c) == step[c] -> takeNext(c); check() }
#endif
#ifdef MUTANT_SPLITENQ
  :: d_step { st[c] == WAITING && step[c] < SIZE(c) ->
       m1 = MEM(c, step[c]); enq(m1, c); step[c]++;
       if :: ELIGIBLE(c) -> grantSet(c) :: else -> skip fi;
       check() }
#endif
  :: d_step { st[c] == HELD -> st[c] = IDLE; printf("ev c%d releases\n", c); freeAll(c); check() }
  :: d_step { st[c] == WAITING && cancels < CANCELS ->
       /* the waiter's deadline: it leaves every queue in one transaction */
       cancels++;
       st[c] = IDLE;
       printf("ev c%d gives up\n", c);
       j1 = 0;
       do
       :: j1 < SIZE(c) ->
          m1 = MEM(c, j1);
          if :: HOLDS(c, m1) -> hold[m1] = NONE :: else -> skip fi;
          deq(m1, c); j1++
       :: else -> break
       od;
       j1 = 0;
#ifndef MUTANT_NOCANCELHANDOFF
       y = NONE;
       do
       :: j1 < SIZE(c) -> m1 = MEM(c, j1); handoff(m1); j1++
       :: else -> break
       od;
       j1 = 0;
       if :: y != NONE && st[y] == HELD -> REACH(3) :: else -> skip fi;
#endif
       check() }
  od
}

/* The set's lease expires: one lease for the whole set (a renewal
 * renews every member in one transaction), so every member is freed in
 * one step and the client learns it has lost the set. Mutant SPLITEXPIRE:
 * each member has its own lease, renewed apart, and one expires alone. */
inline expire(r) {
  x = hold[r];
  printf("ev the lease of c%d expires\n", x);
#ifdef MUTANT_SPLITEXPIRE
  hold[r] = NONE; handoff(r);
#else
  if :: SIZE(x) > 1 -> REACH(4) :: else -> skip fi;
  st[x] = IDLE; freeAll(x);
#endif
  check()
}

proctype Expiry() {
  do
  :: d_step { hold[0] != NONE && st[hold[0]] == HELD -> expire(0) }
  :: d_step { hold[1] != NONE && st[hold[1]] == HELD -> expire(1) }
#if NR > 2
  :: d_step { hold[2] != NONE && st[hold[2]] == HELD -> expire(2) }
#endif
  od
}

init {
  atomic {
    i = 0;
    do
    :: i < NR -> hold[i] = NONE; k = 0;
       do
       :: k < NC -> q[i].w[k] = NONE; k++
       :: else -> break
       od;
       i++
    :: else -> break
    od;
    i = 0; k = 0;
    k = 0;
    do
    :: k < NC -> st[k] = IDLE; run Client(k); k++
    :: else -> break
    od;
    k = 0;
    run Expiry()
  }
}

#ifdef LIVE
/* No starvation: under weak fairness (pan -a -f), every waiter is
 * eventually granted its whole set. */
#define SERVED(c) (st[c] == WAITING -> <> (st[c] == HELD))
#if NC > 4
ltl fifo { [] (SERVED(0) && SERVED(1) && SERVED(2) && SERVED(3) && SERVED(4)) }
#else
ltl fifo { [] (SERVED(0) && SERVED(1) && SERVED(2) && SERVED(3)) }
#endif
#endif
