/* Shared by the three models (fencegate.pml, lockset.pml, rwlock.pml).
 *
 * Non-vacuity. REACH(k) marks event k (check.sh lists them). In a
 * verification run it prints "cover k reached" the first time the search
 * executes it, from a C array outside the state vector, so the safe run
 * itself shows that its properties were checked on states where each
 * event happens. With -DCOVER=k it is instead an assertion that event k
 * never happens (a trail to it); -DNOCOVER makes it a no-op (spin -t
 * replays cannot run C code). */
#if defined(COVER)
#define REACH(k) assert(COVER != k)
#elif defined(NOCOVER)
#define REACH(k) skip
#else
c_decl { int coverHit[32]; }
#define REACH(k) c_code { if (!coverHit[k]) { coverHit[k] = 1; printf("cover %d reached\n", k); } }
#endif
