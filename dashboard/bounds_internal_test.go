// Proves the in-memory bounds hold: known resources, gates, decisions per
// gate, pending commands per gate and listed actions never exceed their
// limits, and what is dropped is the oldest.
package dashboard

import (
	"fmt"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate/report"
)

func TestKnownResourcesBounded(t *testing.T) {
	k := newKnownSet()
	for i := range KnownResourcesMax + 500 {
		k.note(fmt.Sprintf("r/%05d", i), int64(i+1))
	}
	if n := len(k.seen); n > KnownResourcesMax {
		t.Fatalf("%d names kept, at most %d", n, KnownResourcesMax)
	}
	if got := k.recent(1); len(got) != 1 || got[0] != fmt.Sprintf("r/%05d", KnownResourcesMax+499) {
		t.Errorf("newest kept: %v", got)
	}
	if _, ok := k.seen["r/00000"]; ok {
		t.Error("the oldest name survived")
	}
}

func TestGatesAndDecisionsBounded(t *testing.T) {
	s := newGateStore()
	now := time.Unix(1_800_000_000, 0)
	rep := func(seqs int) *report.Report {
		r := &report.Report{Schema: report.SchemaReport, LogID: "l"}
		for i := range seqs {
			r.Decisions = append(r.Decisions, report.Decision{Seq: uint64(i + 1), Outcome: "ACCEPTED"})
		}
		return r
	}
	for i := range GatesMax + 3 {
		if err := s.accept(fmt.Sprintf("gate-%03d", i), rep(0), now.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.gates); n != GatesMax {
		t.Fatalf("%d gates kept, want %d", n, GatesMax)
	}
	if _, ok := s.gates["gate-000"]; ok {
		t.Error("the gate silent longest was kept")
	}
	last := now.Add(time.Hour)
	if err := s.accept("gate-x", rep(DecisionsKeptMax+10), last); err != nil {
		t.Fatal(err)
	}
	if d := s.gates["gate-x"].decisions; len(d) != DecisionsKeptMax || d[0].Seq != 11 {
		t.Errorf("kept %d decisions from seq %d", len(d), d[0].Seq)
	}
}

func TestPendingCommandsBounded(t *testing.T) {
	l := &actionLog{}
	now := time.Unix(1_800_000_000, 0)
	for i := range CommandsPendingMax + 1 {
		a := &Action{ID: fmt.Sprint(i), Gate: "gate-1", State: StateQueued, command: &report.SignedCommand{}, expiresAt: now.Add(time.Minute)}
		err := l.add(a, now)
		if (i < CommandsPendingMax) != (err == nil) {
			t.Fatalf("command %d: %v", i, err)
		}
	}
	for i := range ActionsKeptMax + 5 {
		_ = l.add(&Action{ID: fmt.Sprint("done-", i), State: StateDone}, now)
	}
	if n := len(l.list(now)); n != ActionsKeptMax {
		t.Errorf("%d actions kept, want %d", n, ActionsKeptMax)
	}
	if got := len(l.deliver("gate-1", now)); got != report.CommandsPerAnswerMax {
		t.Errorf("delivered %d, want %d (pending commands are never dropped)", got, report.CommandsPerAnswerMax)
	}
	if got := len(l.deliver("gate-1", now.Add(2*time.Minute))); got != 0 {
		t.Errorf("delivered %d expired commands", got)
	}
}
