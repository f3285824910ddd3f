// The checker's second look at ZooKeeper's history, after the run: the
// members' own logs. The watch (zookeeper_watch.go) sees a regression
// only if it read the state that was lost; an epoch that lived a few
// hundred milliseconds between two of its reads goes unseen (seed 187:
// three transactions, one of them a grant, lost that way). But every
// fork ends with a member's sync that truncates it or replaces its data
// ("Truncating log to get in sync with the leader 0xZ", "Getting a
// snapshot from leader 0xZ"), and every registry answer carries the zxid
// of the state it came from (record.Event.Revision): an answer given
// before that sync, from a state beyond Z, is a transaction the
// ensemble acknowledged and no longer holds (zxids order the history,
// epoch by epoch, and never go back, whatever was lost).

package chaos

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/fencegate/fencegate/chaos/record"
)

// lossMarginMs: an answer from a state beyond a member's sync counts as
// lost only when it came this long before the sync. A leader syncing a
// member while it serves commits on after choosing Z (its history's end,
// maybe the last zxid of the epoch before its own), and such a commit is
// answered an instant before the member logs the sync. A fork's lost
// answers come before the old leader stopped and the new one was
// elected, seconds before (4.3 s in seed 187).
const lossMarginMs = 1000

// zkSyncLine matches a member's sync to a history ending at 0xZ.
var zkSyncLine = regexp.MustCompile(`^(\S+) .*(?:Truncating log to get in sync with the leader|Getting a snapshot from leader) 0x([0-9a-f]+)`)

// zkLogTime is the members' log time layout (testkit/zktest's).
const zkLogTime = "2006-01-02T15:04:05.000-0700"

// zkSync is one member's sync to a history ending at zxid.
type zkSync struct {
	member string
	atNs   int64
	zxid   uint64
}

// zkLosses returns a regression for each member sync in storeDir's
// member logs (zk*.log) that lost answers of h: answers given before the
// sync from a state beyond it (above), with no restore between them. Each spans the first lost
// answer's call to the sync. A sync whose lost answers an earlier one
// already covered adds nothing. No logs (an etcd run), no regressions.
func zkLosses(storeDir string, h *History) ([]record.Event, error) {
	syncs, err := readZKSyncs(storeDir)
	if err != nil {
		return nil, err
	}
	var restores []record.Event
	for _, r := range h.restores() {
		if r.Kind == record.KindRestore {
			restores = append(restores, r)
		}
	}
	covered := map[int]bool{}
	var out []record.Event
	for _, s := range syncs {
		first, lost, maxRev := int64(0), 0, uint64(0)
		for i, e := range h.Events {
			if e.Revision == 0 || e.RetNs > s.atNs || covered[i] || !lostAt(e, s) || restoredBetween(restores, e.RetNs, s.atNs) {
				continue
			}
			covered[i] = true
			if lost++; first == 0 || e.CallNs < first {
				first = e.CallNs
			}
			maxRev = max(maxRev, e.Revision)
		}
		if lost == 0 {
			continue
		}
		out = append(out, record.Event{Kind: record.KindRegression, Proc: "checker", CallNs: first, RetNs: s.atNs, Result: record.ResultOK,
			Detail: fmt.Sprintf("the store went back: %s synced to zxid %#x, after %d answers from states up to %#x (ZooKeeper lost transactions it had acknowledged)",
				s.member, s.zxid, lost, maxRev)})
	}
	return out, nil
}

// restoredBetween reports whether a restore began between two instants:
// what it forgot is the restore's doing.
func restoredBetween(restores []record.Event, from, to int64) bool {
	for _, r := range restores {
		if r.CallNs >= from && r.CallNs <= to {
			return true
		}
	}
	return false
}

// lostAt reports whether answer e's state is beyond sync s's history.
func lostAt(e record.Event, s zkSync) bool {
	return e.Revision > s.zxid && e.RetNs+lossMarginMs*int64(time.Millisecond) < s.atNs
}

// readZKSyncs reads every member sync from storeDir/zk*.log, in time
// order.
func readZKSyncs(storeDir string) ([]zkSync, error) {
	files, err := filepath.Glob(filepath.Join(storeDir, "zk*.log"))
	if err != nil || storeDir == "" {
		return nil, err
	}
	var out []zkSync
	for _, f := range files {
		member := filepath.Base(f)
		member = member[:len(member)-len(".log")]
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			m := zkSyncLine.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			at, err1 := time.Parse(zkLogTime, m[1])
			z, err2 := strconv.ParseUint(m[2], 16, 64)
			if err1 == nil && err2 == nil {
				out = append(out, zkSync{member: member, atNs: at.UnixNano(), zxid: z})
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("chaos: %s: %w", f, err)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].atNs < out[j].atNs })
	return out, nil
}
