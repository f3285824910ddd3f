// This file proves a read/write lock reader's grant never opens a gate:
// presented for its lock's resource, or for its own resource NAME/_read,
// a mutation or a job under it is READ_GRANT (a stable code, before any
// state is read), while a writer's grant on the same name passes; and
// the gate's reader suffix is the registry's.
package gate_test

import (
	"errors"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/wire"
)

func TestReadGrantNeverMutates(t *testing.T) {
	iss := gatetest.NewIssuer("main")
	pol := &gate.Policy{Verifier: iss.Verifier}
	if err := pol.Check(); err != nil {
		t.Fatal(err)
	}
	reader := writerA(5)
	reader.Resource = wire.ReadResource(res)
	m := iss.Mutation(reader, 1, "p")
	if _, err := pol.Authenticate(m, owner); !errors.Is(err, gate.ErrReadGrant) || gate.OutcomeOf(err) != gate.ReadGrant {
		t.Fatalf("reader's grant for its own resource: %v, want READ_GRANT", err)
	}
	m.Resource = res // the envelope names the lock: the grant is still a reader's
	if _, err := pol.Authenticate(m, owner); !errors.Is(err, gate.ErrReadGrant) {
		t.Fatalf("reader's grant for the lock's resource: %v, want READ_GRANT", err)
	}
	if _, err := pol.Authenticate(iss.Mutation(writerA(5), 1, "p"), owner); err != nil {
		t.Fatalf("the writer's grant: %v", err)
	}
	if !gate.ReaderResource(wire.ReadResource("a/b")) || gate.ReaderResource(res) || gate.ReaderResource("/_read") {
		t.Fatal("gate.ReaderResource disagrees with wire.ReadResource")
	}
	if gate.ReadGrant.Final() != true {
		t.Fatal("READ_GRANT must be final: no copy of the envelope is ever accepted")
	}
}
