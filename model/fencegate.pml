/* fencegate: registry + gate + 3 clients (NC), with -DRANGE the fence
 * ranges of issue 28, checked exhaustively within the bounds of
 * params.pml. See model/README.md for the map from each step to
 * the Go code, the properties and what is not modelled. */
#include "params.pml"
#include "state.pml"
#include "net.pml"
#include "symmetry.pml"
#include "registry.pml"
#include "client.pml"
#include "gate.pml"
#include "operator.pml"

init {
  atomic {
#ifdef EXP_GOFF0
    goff = 0;
#else
    if :: goff = 0 :: goff = M fi;
#endif
    rec.holder = NONE;
    rec.e[0].rg = NONE; rec.e[1].rg = NONE;
#if NC > 2
    rec.e[2].rg = NONE;
#endif
    run Clock();
    run Operator();
    run Gate();
    run Client(0);
    run Client(1);
#if NC > 2 && !defined(EXP_NC2)
    run Client(2)
#endif
  }
}
