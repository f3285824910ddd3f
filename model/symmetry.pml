/* Client symmetry. The three clients run the same code and are told
 * apart only by index: in cl[], in the request index rec.rq/rg, and as
 * grant owners (compared only for equality, as part of the operation
 * root). So any permutation of client identities, applied to all three
 * together, maps runs to runs and keeps every property; canonClients
 * sorts the clients after every step that can change them, so the
 * search stores one state per equivalence class.
 *
 * Sort key: the set of grants the client owns (disjoint for two
 * clients), then its state and request number. Two clients that own no
 * grant differ in nothing else (no grant, statement, segment or request
 * entry), so equal keys mean identical clients and the order is
 * canonical. */

#define OWNS(c) ((grants[0].owner == (c) && gN > 0 -> 1 : 0) + \
                 (grants[1].owner == (c) && gN > 1 -> 2 : 0) + \
                 (G > 2 -> (grants[2 % G].owner == (c) && gN > 2 -> 4 : 0) : 0) + \
                 (G > 3 -> (grants[3 % G].owner == (c) && gN > 3 -> 8 : 0) : 0) + \
                 (G > 4 -> (grants[4 % G].owner == (c) && gN > 4 -> 16 : 0) : 0) + \
                 (G > 5 -> (grants[5 % G].owner == (c) && gN > 5 -> 32 : 0) : 0))
#define CKEY(c) (OWNS(c) * 64 + (cl[c].ttl == TTL -> 32 : 0) + cl[c].state * 4 + cl[c].rq)

/* swapClients(a, b): exchange the identities a and b everywhere */
inline swapClients(a, b) {
  j = cl[a].state; cl[a].state = cl[b].state; cl[b].state = j;
  j = cl[a].rq;    cl[a].rq = cl[b].rq;       cl[b].rq = j;
  j = cl[a].ttl;   cl[a].ttl = cl[b].ttl;     cl[b].ttl = j;
  j = cl[a].g;     cl[a].g = cl[b].g;         cl[b].g = j;
  j = cl[a].s;     cl[a].s = cl[b].s;         cl[b].s = j;
  j = cl[a].v;     cl[a].v = cl[b].v;         cl[b].v = j;
  j = cl[a].regr;  cl[a].regr = cl[b].regr;   cl[b].regr = j;
  j = cl[a].next;  cl[a].next = cl[b].next;   cl[b].next = j;
  j = cl[a].rn;    cl[a].rn = cl[b].rn;       cl[b].rn = j;
  j = rec.e[a].rq;   rec.e[a].rq = rec.e[b].rq;     rec.e[b].rq = j;
  j = rec.e[a].rg;   rec.e[a].rg = rec.e[b].rg;     rec.e[b].rg = j;
  i = 0;
  do
  :: i < gN ->
     if
     :: grants[i].owner == a -> grants[i].owner = b
     :: grants[i].owner == b -> grants[i].owner = a
     :: else -> skip
     fi;
     i++
  :: else -> break
  od;
  j = 0
}

inline orderClients(a, b) {
  if
  :: CKEY(a) > CKEY(b) -> swapClients(a, b)
  :: else -> skip
  fi
}

inline canonClients() {
#ifndef NOSYMMETRY
  orderClients(0, 1);
#if NC > 2
  orderClients(1, 2);
  orderClients(0, 1)
#endif
#else
  skip
#endif
}
