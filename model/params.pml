/* Parameters and bounds of the fencegate model. Every one can be set with
 * -D on the spin command line (model/check.sh passes the full bounds with
 * --full). Time is in ticks of the registry's logical clock; one tick is
 * the unit of the skew bound. */

#ifndef M
#define M 1          /* skew bound m: Policy.StatusSkewMax = ClockSkewMaxMs */
#endif
#ifndef TTL
#define TTL 3        /* lease TTL (registry clock) */
#endif
#ifndef TTLS
#define TTLS 0       /* a second, short TTL a client may ask for (0: only TTL) */
#endif
#ifndef PTTL
#define PTTL 2       /* StatusProofTTLMs: life of a status proof */
#endif
#ifndef LD
#define LD 1         /* LockDelayMs after an expiry (the registry requires LD >= M) */
#endif
#ifndef TMAX
#define TMAX 3       /* time horizon: the true clock runs 0..TMAX */
#endif
#ifndef G
#define G 2          /* grants the registry may issue in one run */
#endif
#ifndef FAULTS
#define FAULTS 2     /* lost registry answers + lost writes per run */
#endif
#ifndef NET
#define NET 2        /* writes in flight to the gate at once (held, reordered) */
#endif
#ifndef SEQMAX
#define SEQMAX 1     /* segments per grant */
#endif
#ifndef RNMAX
#define RNMAX 1      /* renewals per lease */
#endif
#ifndef RQMAX
#define RQMAX 1      /* request IDs (acquire attempts) per client */
#endif

/* Fence ranges (-DRANGE, issue 28): a fence is GEN * RK + counter, the
 * product's generation<<32 | counter with a range of RK - 1 counters
 * (1..RK-1; the product has 2^32 - 1). The store's generation is raised
 * only by a bump, at most BUMPS per run, never beyond GENMAX. */
#ifndef RK
#define RK 3         /* fences per generation: counters 1..RK-1 */
#endif
#ifndef BUMPS
#define BUMPS 2      /* fence-range bumps per run */
#endif
#ifndef GENMAX
#define GENMAX 4     /* highest generation the model lets a bump reach */
#endif
#ifndef WAITGENS
#define WAITGENS 1   /* a bump waits out a generation at most this far ahead of the clock (bumpWaitMsMax 2.5 s: one whole second surely) */
#endif
#define GENOF(fence) ((fence) / RK)

#ifndef NC
#define NC 3         /* clients: 3, or 2 (-DNC=2, a smaller configuration) */
#endif
#define NONE 7       /* no grant (grant indices fit in 3 bits) */

#if TMAX + M + TTL * (RNMAX + 1) > 31
#error "times must stay below 32 (they are kept in 5 bits)"
#endif
#if G + 2 > 15
#error "fences must stay below 16 (they are kept in 4 bits)"
#endif
#if defined(RANGE) && (GENMAX * RK + RK > 15 || GENMAX > 6 || RK < 2 || BUMPS > 3)
#error "with RANGE, GENMAX * RK + RK must stay below 16 (fences in 4 bits), GENMAX at most 6 (clk in 3 bits), RK at least 2 and BUMPS at most 3"
#endif
#if TMAX + M + PTTL > 31
#error "TMAX + M + PTTL must stay below 32 (net.pml packs times in 5 bits)"
#endif
#if G > 6
#error "G must be at most 6 (operator.pml, net.pml)"
#endif
#if LD < M && !defined(ALLOW_LD_BELOW_M)
#error "the registry refuses LockDelayMs below ClockSkewMaxMs (LD >= M)"
#endif
#if NC != 2 && NC != 3
#error "NC must be 2 or 3"
#endif
#if SEQMAX > 3
#error "SEQMAX must be at most 3 (see client.pml)"
#endif

#define max(a, b) ((a) > (b) -> (a) : (b))
#define min(a, b) ((a) < (b) -> (a) : (b))

/* Clocks. The true time is T. Registry replica r reads T + r*M (replica 0
 * is the slowest clock, replica 1 the fastest: they differ by exactly m);
 * the gate reads T + goff, goff in {0, M}, chosen at start. */
#define RNOW(r) (T + (r) * M)
#define GNOW (T + goff)

#include "cover.pml"
