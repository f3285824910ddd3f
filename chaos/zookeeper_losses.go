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
	"strings"
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

// zkLeaderSyncLine matches a leader's start of a learner's sync, which
// names the learner's history's end (peerLastZxid).
var zkLeaderSyncLine = regexp.MustCompile(`^(\S+) .*Synchronizing with Learner sid: (\d+) .*peerLastZxid=0x([0-9a-f]+)`)

// leaderSyncWindowMs bounds how long before a member's sync the leader's
// line naming that member's history is looked for.
const leaderSyncWindowMs = 10_000

// zkSync is one member's sync to a history ending at zxid. peerLast is
// the member's own history's end as the syncing leader logged it, 0 when
// no leader's line was found: what the sync discarded lies in (zxid,
// peerLast]. The leader truncates a member to the last zxid they share
// (or to its own history's end, or replaces its data with a snapshot of
// it), so its own later zxids, which the member may never have had,
// are above zxid too; peerLast tells them from the member's lost ones.
type zkSync struct {
	member   string
	atNs     int64
	zxid     uint64
	peerLast uint64
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

// lostAt reports whether answer e's state is one sync s discarded:
// beyond the history it synced to and, when the leader logged it, within
// the member's own (above it, it is the new leader's history, answered
// while the member was away).
func lostAt(e record.Event, s zkSync) bool {
	if s.peerLast != 0 && e.Revision > s.peerLast {
		return false
	}
	return e.Revision > s.zxid && e.RetNs+lossMarginMs*int64(time.Millisecond) < s.atNs
}

// readZKSyncs reads every member sync from storeDir/zk*.log, in time
// order, each with the member's history's end the syncing leader logged
// last before it (within leaderSyncWindowMs).
func readZKSyncs(storeDir string) ([]zkSync, error) {
	files, err := filepath.Glob(filepath.Join(storeDir, "zk*.log"))
	if err != nil || storeDir == "" {
		return nil, err
	}
	var syncs, leaders []zkSync
	for _, f := range files {
		member := strings.TrimSuffix(filepath.Base(f), ".log")
		s, l, err := readZKLog(f, member)
		if err != nil {
			return nil, err
		}
		syncs, leaders = append(syncs, s...), append(leaders, l...)
	}
	sort.SliceStable(syncs, func(i, j int) bool { return syncs[i].atNs < syncs[j].atNs })
	for i, s := range syncs {
		var at int64
		for _, l := range leaders {
			if l.member == s.member && l.atNs <= s.atNs && l.atNs >= s.atNs-leaderSyncWindowMs*int64(time.Millisecond) && l.atNs >= at {
				at, syncs[i].peerLast = l.atNs, l.peerLast
			}
		}
	}
	return syncs, nil
}

// readZKLog reads one member's log: its own syncs, and the syncs it
// started as leader (member: the learner's name, peerLast: its history's
// end).
func readZKLog(f, member string) (syncs, leaders []zkSync, err error) {
	fh, err := os.Open(f)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if m := zkSyncLine.FindStringSubmatch(sc.Text()); m != nil {
			at, err1 := time.Parse(zkLogTime, m[1])
			z, err2 := strconv.ParseUint(m[2], 16, 64)
			if err1 == nil && err2 == nil {
				syncs = append(syncs, zkSync{member: member, atNs: at.UnixNano(), zxid: z})
			}
		} else if m := zkLeaderSyncLine.FindStringSubmatch(sc.Text()); m != nil {
			at, err1 := time.Parse(zkLogTime, m[1])
			sid, err2 := strconv.Atoi(m[2])
			p, err3 := strconv.ParseUint(m[3], 16, 64)
			if err1 == nil && err2 == nil && err3 == nil {
				leaders = append(leaders, zkSync{member: zkName(sid), atNs: at.UnixNano(), peerLast: p})
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("chaos: %s: %w", f, err)
	}
	return syncs, leaders, nil
}
