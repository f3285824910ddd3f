// Proves StartEnsemble makes one replicated ensemble: a node created
// through one member is read through another, and when the leader is
// killed the other two elect a new one and still serve what was written.
package zktest

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestEnsembleReplicatesAndSurvivesItsLeader(t *testing.T) {
	e := StartEnsemble(t, EnsembleOptions{})
	old, err := e.Leader()
	if err != nil {
		t.Fatal(err)
	}
	var others []*Member
	for _, m := range e.Members {
		if m.ID != old {
			others = append(others, m)
		}
	}
	write := connect(t, others[0].Addr)
	if _, err := write.Create("/ensemble", []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := e.Member(old).Kill(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*StartTimeout)
	defer cancel()
	if err := e.WaitServing(ctx, old); err != nil {
		t.Fatalf("leader %d killed: %v", old, err)
	}
	now, err := e.Leader()
	if err != nil || now == old {
		t.Fatalf("leader after killing %d: %d, %v", old, now, err)
	}
	read := connect(t, others[1].Addr)
	if _, err := read.Sync("/ensemble"); err != nil {
		t.Fatal(err)
	}
	if got, _, err := read.Get("/ensemble"); err != nil || string(got) != "v1" {
		t.Fatalf("member %d reads %q, %v; want v1 written through member %d", others[1].ID, got, err, others[0].ID)
	}
	t.Logf("leader %d killed, %d elected; member %d reads what member %d wrote", old, now, others[1].ID, others[0].ID)
}

// connect opens a session on one member only.
func connect(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, 6*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(StartTimeout)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c
			}
		case <-deadline:
			t.Fatalf("no session at %s", addr)
		}
	}
}

// quiet drops the client's log lines (a killed member's dropped
// connection is expected here).
type quiet struct{}

func (quiet) Printf(string, ...any) {}
