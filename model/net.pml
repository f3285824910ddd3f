/* The network to the gate: a set of at most NET writes, each packed into
 * one int, kept sorted (descending, 0 = empty) so the set has one
 * representation. Any write in flight may be delivered and decided
 * (consumed), delivered and kept (a duplicate arrives later), or lost;
 * they arrive in any order, after any delay. */

#define MSG(gg, ss, vv_, rr, q) (((((gg) * 32 + (ss)) * 32 + (vv_)) * 2 + (rr)) * 4 + (q))
#define M_SEQ(x)  ((x) % 4)
#define M_REGR(x) (((x) / 4) % 2)
#define M_V(x)    (((x) / 8) % 32)
#define M_S(x)    (((x) / 256) % 32)
#define M_G(x)    ((x) / 8192)

#if NET == 1
#define IN_NET(x) (net[0].w == (x))
#elif NET == 2
#define IN_NET(x) (net[0].w == (x) || net[1].w == (x))
#elif NET == 3
#define IN_NET(x) (net[0].w == (x) || net[1].w == (x) || net[2].w == (x))
#else
#error "NET must be 1, 2 or 3"
#endif

/* insert into the last (empty) slot, then bubble into place */
inline netInsert(x) {
  net[NET - 1].w = x;
  j = NET - 1;
  do
  :: j > 0 && net[j].w > net[j - 1].w -> m = net[j].w; net[j].w = net[j - 1].w; net[j - 1].w = m; j--
  :: else -> break
  od;
  m = 0
}

/* remove slot jj, shift the rest up */
inline netRemove(jj) {
  j = jj;
  do
  :: j < NET - 1 -> net[j].w = net[j + 1].w; j++
  :: else -> break
  od;
  net[NET - 1].w = 0
}

