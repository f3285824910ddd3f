package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// watchWaitMs bounds how long a test waits for a watch event; generous,
// since it is a liveness bound, not a timing assertion.
const watchWaitMs = 10_000

func testWatch(t *testing.T, s registry.Store) {
	first := mustCommit(t, s, registry.Write{Resource: "w/1", Record: &lockstate.Record{HighestFence: 1}})
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// From an old revision: the change at first.Revision is reported.
	ch, err := s.Watch(wctx, "w/1", first.Revision)
	if err != nil {
		t.Fatal(err)
	}
	waitFence(t, ch, 1)
	rev := first.Revision
	for f := uint64(2); f <= 5; f++ {
		res := mustCommit(t, s, registry.Write{Resource: "w/1", RecordRev: rev, Record: &lockstate.Record{HighestFence: f}})
		if !res.OK {
			t.Fatal("commit failed")
		}
		rev = res.Revision
	}
	// Coalesced or not, the latest record arrives, in order.
	waitFence(t, ch, 5)
	// Writes to other resources do not wake this watch with their records.
	mustCommit(t, s, registry.Write{Resource: "w/2", Record: &lockstate.Record{HighestFence: 99}})
	cancel()
	for ev := range ch { // closes after cancel
		if ev.Record.HighestFence == 99 {
			t.Fatal("watch saw another resource")
		}
	}
}

func waitFence(t *testing.T, ch <-chan registry.RecordEvent, want uint64) {
	t.Helper()
	timeout := time.After(watchWaitMs * time.Millisecond)
	var last uint64
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("watch closed waiting for fence %d", want)
			}
			if ev.Record.HighestFence < last {
				t.Fatalf("watch went backwards: %d after %d", ev.Record.HighestFence, last)
			}
			last = ev.Record.HighestFence
			if last == want {
				return
			}
		case <-timeout:
			t.Fatalf("no watch event with fence %d (last %d)", want, last)
		}
	}
}
