// Proves the checker reads ZooKeeper's lost transactions from its
// members' logs: an answer from a state beyond a member's later sync is
// lost (a regression from its call to the sync), across epochs or well
// before the sync in the same one; an answer within the sync's history,
// one an instant before the sync (a leader serving while it syncs), or
// one a restore explains, is not.
package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/chaos/record"
)

func TestZKLosses(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 12, 7, 6, 13, 36, 821e6, time.UTC) // seed 187's sync, as zk2 logged it
	line := at.Format(zkLogTime) + " [QuorumPeer[myid=2](plain=127.0.0.1:1)(secure=disabled)] WARN org.apache.zookeeper.server.quorum.Learner - Truncating log to get in sync with the leader 0x1000000a5\n"
	if err := os.WriteFile(filepath.Join(dir, "zk2.log"), []byte("noise\n"+line), 0o600); err != nil {
		t.Fatal(err)
	}
	ans := func(before time.Duration, rev uint64) record.Event {
		ret := at.Add(-before).UnixNano()
		return record.Event{Kind: record.KindAcquire, Result: record.ResultOK, CallNs: ret - 5e6, RetNs: ret, Revision: rev}
	}
	for _, c := range []struct {
		name string
		evs  []record.Event
		lost int
	}{
		{"a later epoch's grant, 4.3 s before (seed 187)", []record.Event{ans(4300*time.Millisecond, 0x200000002)}, 1},
		{"the sync's own epoch, well before", []record.Event{ans(3*time.Second, 0x1000000b0)}, 1},
		{"within the sync's history", []record.Event{ans(3*time.Second, 0x1000000a5), ans(5*time.Second, 0x100000010)}, 0},
		{"an instant before the sync", []record.Event{ans(20*time.Millisecond, 0x200000001)}, 0},
		{"after the sync", []record.Event{ans(-time.Second, 0x300000001)}, 0},
		{"a restore between", []record.Event{ans(4*time.Second, 0x200000002),
			{Kind: record.KindRestore, Result: record.ResultOK, CallNs: at.Add(-2 * time.Second).UnixNano(), RetNs: at.Add(-time.Second).UnixNano()}}, 0},
	} {
		got, err := zkLosses(dir, &History{Events: c.evs})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != c.lost {
			t.Errorf("%s: %d regressions, want %d: %+v", c.name, len(got), c.lost, got)
			continue
		}
		if c.lost == 1 && (got[0].RetNs != at.UnixNano() || got[0].CallNs != c.evs[0].CallNs || !strings.Contains(got[0].Detail, "zk2 synced to zxid 0x1000000a5")) {
			t.Errorf("%s: %+v, want a regression from the answer's call to the sync", c.name, got[0])
		}
	}
	if got, err := zkLosses(t.TempDir(), &History{Events: []record.Event{ans(time.Minute, 9)}}); err != nil || len(got) != 0 {
		t.Errorf("no member logs (an etcd run): %+v, %v", got, err)
	}
}
