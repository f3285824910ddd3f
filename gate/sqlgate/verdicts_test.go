// This file proves MUTATION_UNKNOWN recovery by operation ID: the three
// verdicts QueryOperation answers, and that a PROVEN_ABSENT operation's
// delayed copy is indeed rejected.
package sqlgate_test

import (
	"errors"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// testVerdicts proves the three MUTATION_UNKNOWN answers.
func testVerdicts(t *testing.T, b backend) {
	e := newEnv(t, b, nil)
	const r = "rec/one"
	if _, err := e.apply(owner, e.iss.Mutation(wr(r, 5, "op-a"), 1, "p"), "p"); err != nil {
		t.Fatal(err)
	}
	ask := func(op string, fence uint64) gate.Answer {
		a, err := e.g.QueryOperation(e.ctx, e.db, r, op, fence)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	if a := ask("op-a", 5); a.Verdict != gate.VerdictAccepted || len(a.Receipts) != 1 || a.Receipts[0].FenceToken != 5 {
		t.Fatalf("accepted: %+v", a)
	}
	// op-lost was sent under fence 6 and its outcome is unknown: nothing
	// stops a delayed copy from landing yet.
	if a := ask("op-lost", 6); a.Verdict != gate.VerdictUndetermined {
		t.Fatalf("undetermined: %+v", a)
	}
	// A newer owner writes under fence 7: fence 6 can never be accepted now.
	if _, err := e.apply(owner, e.iss.Mutation(wr(r, 7, "op-new"), 1, "p"), "p"); err != nil {
		t.Fatal(err)
	}
	if a := ask("op-lost", 6); a.Verdict != gate.VerdictProvenAbsent || a.HighestFence != 7 {
		t.Fatalf("proven absent: %+v", a)
	}
	// And indeed the delayed copy is rejected.
	late := e.iss.WithStatus(e.iss.Mutation(wr(r, 6, "op-lost"), 1, "p"), grant.StateExpired)
	if _, err := e.apply(owner, late, "late"); !errors.Is(err, gate.ErrStaleOwner) {
		t.Fatalf("late copy: %v", err)
	}
	if a := ask("op-lost", 6); a.Verdict != gate.VerdictProvenAbsent {
		t.Fatalf("still proven absent: %+v", a)
	}
}
