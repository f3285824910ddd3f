// This file proves a watch from a compacted revision ends (the channel
// closes) instead of hanging, so a waiter falls back to reading.
package etcdstore

import (
	"context"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

func TestWatchFromCompactedRevisionCloses(t *testing.T) {
	ctx := context.Background()
	s := freshStore(t)
	first, err := s.Commit(ctx, registry.Write{Resource: "w/1", Record: &lockstate.Record{HighestFence: 1}})
	if err != nil || !first.OK {
		t.Fatal(err)
	}
	second, err := s.Commit(ctx, registry.Write{Resource: "w/1", RecordRev: first.Revision, Record: &lockstate.Record{HighestFence: 2}})
	if err != nil || !second.OK {
		t.Fatal(err)
	}
	if _, err := testClient.Compact(ctx, int64(second.Revision)); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := s.Watch(wctx, "w/1", first.Revision)
	if err != nil {
		t.Fatal(err)
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("watch from a compacted revision neither failed nor closed")
		}
	}
}
