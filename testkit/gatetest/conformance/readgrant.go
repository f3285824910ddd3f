package conformance

import (
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/wire"
)

// testReadGrant: a read/write lock reader's grant (issue 46: an ordinary
// grant on NAME/_read, carrying the fence of the last writer it saw)
// never opens a gate for a mutation. Presented for its own resource —
// which the gate has never seen, where the fence and segment would
// otherwise be a first write — or for the lock's NAME, it is READ_GRANT,
// and neither resource's state, business effects or records change. The
// writer's next segment on NAME is still accepted afterwards: the
// refusal paused nothing.
func testReadGrant(t T, e *Env) {
	const name = "conf/rw"
	reader := wire.ReadResource(name)
	mustAccept(t, e, e.H, e.Mut(name, 5, "op-w", 1, "w1"), "w1")
	for _, target := range []string{reader, name} {
		beforeName, beforeReader := snap(t, e, e.H, name), snap(t, e, e.H, reader)
		m := e.Mut(reader, 5, "op-r", 1, "r1") // the reader's grant: resource NAME/_read at the writer's fence
		m.Resource = target
		_, err := apply(t, e, e.H, m, "r1")
		if got := gate.OutcomeOf(err); got != gate.ReadGrant {
			t.Fatalf("a reader's grant presented for %s: outcome %q (%v), want %s", target, got, err, gate.ReadGrant)
		}
		unchanged(t, e, e.H, name, beforeName, "a reader's grant presented for "+target)
		unchanged(t, e, e.H, reader, beforeReader, "a reader's grant presented for "+target)
	}
	mustAccept(t, e, e.H, e.Mut(name, 5, "op-w", 2, "w2"), "w2")
	if fx := effects(t, e, e.H, name); len(fx) != 2 || fx[0] != "w1" || fx[1] != "w2" {
		t.Fatalf("effects of %s: %q, want the writer's two segments only", name, fx)
	}
}
