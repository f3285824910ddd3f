// Proves the checker reads ZooKeeper's lost transactions from its
// members' logs: an answer from a state beyond a member's later sync is
// lost (a regression from its call to the sync), across epochs or well
// before the sync in the same one; an answer within the sync's history,
// one an instant before the sync (a leader serving while it syncs), one
// a restore explains, or, when the leader logged the member's history's
// end, one above it (the new leader's own, answered while the member was
// away), is not.
package chaos

import (
	"fmt"
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

// TestZKLossesWithinTheMembersHistory: a member that rejoins with a
// proposal the new leader never had is truncated to the last zxid they
// share, below the new leader's own epoch. Its answers from before the
// sync are not lost: only what the member held beyond the sync (up to
// the peerLastZxid the leader logged) was. Without the leader's line the
// checker cannot tell them apart and counts both, which excuses fences
// issued again across the new leader's history: the weaker judgement.
func TestZKLossesWithinTheMembersHistory(t *testing.T) {
	at := time.Date(2026, 12, 7, 6, 13, 36, 821e6, time.UTC)
	trunc := at.Format(zkLogTime) + " [QuorumPeer[myid=2](plain=127.0.0.1:1)(secure=disabled)] WARN org.apache.zookeeper.server.quorum.Learner - Truncating log to get in sync with the leader 0x1000000a5\n"
	lead := at.Add(-5*time.Millisecond).Format(zkLogTime) + " [LearnerHandler-/127.0.0.1:42900] INFO org.apache.zookeeper.server.quorum.LearnerHandler - Synchronizing with Learner sid: 2 maxCommittedLog=0x300000040 minCommittedLog=0x100000001 lastProcessedZxid=0x300000040 peerLastZxid=0x1000000a7\n"
	ans := func(before time.Duration, rev uint64) record.Event {
		ret := at.Add(-before).UnixNano()
		return record.Event{Kind: record.KindAcquire, Result: record.ResultOK, CallNs: ret - 5e6, RetNs: ret, Revision: rev}
	}
	lostOne, leaders := ans(3*time.Second, 0x1000000a7), ans(4*time.Second, 0x300000010)
	for _, c := range []struct {
		name   string
		leader bool
		lost   int
	}{
		{"the leader's line names the member's history", true, 1},
		{"no leader's line: both counted", false, 2},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "zk2.log"), []byte(trunc), 0o600); err != nil {
			t.Fatal(err)
		}
		if c.leader {
			if err := os.WriteFile(filepath.Join(dir, "zk3.log"), []byte(lead), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		got, err := zkLosses(dir, &History{Events: []record.Event{lostOne, leaders}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !strings.Contains(got[0].Detail, fmt.Sprintf("after %d answers", c.lost)) {
			t.Errorf("%s: %+v; want one regression of %d answers", c.name, got, c.lost)
		}
		if c.leader && len(got) == 1 && got[0].CallNs != lostOne.CallNs {
			t.Errorf("%s: the regression starts at %d, want the lost answer's call %d", c.name, got[0].CallNs, lostOne.CallNs)
		}
	}
}
