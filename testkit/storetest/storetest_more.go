package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry"
)

// watchWaitMs bounds how long a test waits for a watch event; generous,
// since it is a liveness bound, not a timing assertion.
const watchWaitMs = 10_000

// testConcurrentCAS: goroutines increment one record's fence by
// read-compare-swap; every successful commit must count exactly once.
func testConcurrentCAS(t *testing.T, s registry.Store) {
	const workers, each = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				snap, err := s.Read(ctx, "c/1", nil)
				if err != nil {
					errs <- err
					return
				}
				rec := &registry.Record{}
				if snap.Record != nil {
					rec.HighestFence = snap.Record.HighestFence
				}
				rec.HighestFence++
				res, err := s.Commit(ctx, registry.Write{Resource: "c/1", RecordRev: snap.RecordRev, SettingsRev: snap.SettingsRev, Record: rec})
				if err != nil {
					errs <- err
					return
				}
				if res.OK {
					done++
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := mustRead(t, s, "c/1").Record.HighestFence; got != workers*each {
		t.Fatalf("counter %d, want %d: a compare-and-swap lost an update", got, workers*each)
	}
}

func testScan(t *testing.T, s registry.Store) {
	owners := []string{"b", "a-b", "a", "spiffe://x.org/a", "a.b"}
	var ws []registry.RequestWrite
	for _, o := range owners {
		for _, id := range []string{"r2", "r1"} {
			ws = append(ws, registry.RequestWrite{Key: key(o, id), Entry: entry("x", o, id, 1)})
		}
	}
	mustCommit(t, s, registry.Write{Requests: ws})
	var got []registry.RequestKey
	after := registry.RequestKey{}
	for {
		page, err := s.ScanRequests(ctx, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 3 {
			t.Fatalf("page of %d, limit 3", len(page))
		}
		if len(page) == 0 {
			break
		}
		for _, sl := range page {
			if sl.Entry == nil || sl.CreateRev == 0 {
				t.Fatalf("scan slot %+v", sl)
			}
			got = append(got, sl.Key)
		}
		after = page[len(page)-1].Key
	}
	if len(got) != 2*len(owners) {
		t.Fatalf("scanned %d keys, want %d", len(got), 2*len(owners))
	}
	for i := 1; i < len(got); i++ {
		if !got[i-1].Less(got[i]) {
			t.Fatalf("scan order: %v before %v", got[i-1], got[i])
		}
	}
}

func testWatch(t *testing.T, s registry.Store) {
	first := mustCommit(t, s, registry.Write{Resource: "w/1", Record: &registry.Record{HighestFence: 1}})
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
		res := mustCommit(t, s, registry.Write{Resource: "w/1", RecordRev: rev, Record: &registry.Record{HighestFence: f}})
		if !res.OK {
			t.Fatal("commit failed")
		}
		rev = res.Revision
	}
	// Coalesced or not, the latest record arrives, in order.
	waitFence(t, ch, 5)
	// Writes to other resources do not wake this watch with their records.
	mustCommit(t, s, registry.Write{Resource: "w/2", Record: &registry.Record{HighestFence: 99}})
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
