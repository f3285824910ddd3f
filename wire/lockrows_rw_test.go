// Proves the listing's lean form carries a read/write lock: its readers
// (each lease, fence, since, expiry) and its queue's modes, and nothing of
// either for a plain lock.
package wire_test

import (
	"slices"
	"testing"
	"time"

	"github.com/fencegate/fencegate/wire"
)

func TestRowsCarryTheReadersAndModes(t *testing.T) {
	at := time.UnixMilli(1000).UTC()
	l := wire.LockList{Locks: []wire.LockStatus{
		{Resource: "rw", Readers: []wire.LockHolder{{Owner: "a", Lease: "la", Fence: 3, Since: at, ExpiresAt: at.Add(time.Second)}},
			Waiters: []wire.LockWaiter{{Owner: "w"}, {Owner: "r", Read: true}}},
		{Resource: "x", Holder: &wire.LockHolder{Owner: "o"}, Waiters: []wire.LockWaiter{{Owner: "w"}}},
	}}
	rows := wire.RowsOf(l).Rows
	want := []wire.ReaderRow{{Owner: "a", Lease: "la", Fence: 3, SinceMs: 1000, ExpiresAtMs: 2000}}
	if !slices.Equal(rows[0].Readers, want) || rows[0].Modes != "wr" || rows[0].Owner != "" || rows[1].Readers != nil || rows[1].Modes != "" {
		t.Fatalf("rows: %+v", rows)
	}
}
