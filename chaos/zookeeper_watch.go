// The orchestrator's watch on the ZooKeeper ensemble's history, which
// tells the checker when the store went back by itself: ZooKeeper 3.8.0
// can lose transactions it acknowledged (a member that took a new epoch
// without logging the leader's history wins the next election on it and
// truncates the others; docs/guarantees.md, "On ZooKeeper"), and then the
// registry may issue again fences it issued, as after a restore. The
// watch is the checker's own, independent of zkstore's (history.go): a
// session of its own, a synced read of the registry's revision node and
// records every historyPoll.

package chaos

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/chaos/record"
	"github.com/fencegate/fencegate/registry/zkstore"
)

// historyPoll is how often the watch reads the ensemble's history: the
// registry's commits move the revision node's version past the versions
// lost in a few hundred milliseconds after a regression, so it looks
// often.
const historyPoll = 100 * time.Millisecond

// The registry's nodes the watch reads (zkstore's layout, under serve's
// default root): the revision node every commit sets, and the records.
const (
	watchRevPath    = zkstore.DefaultRoot + "/rev"
	watchRecordsDir = zkstore.DefaultRoot + "/r"
)

// znodeSeen is one node's data version and mzxid as last read.
type znodeSeen struct {
	version int32
	mzxid   int64
}

// restoreGen counts restores begun, so that the watch starts over (a new
// session, nothing seen) instead of calling a restore a regression.
type restoreGen struct {
	mu sync.Mutex
	n  int
}

func (g *restoreGen) next() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
}

func (g *restoreGen) get() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// WatchHistory reads the ensemble's history every historyPoll until ctx
// ends, and emits a record.KindRegression event each time it finds the
// history went back: a node (the revision node or a record) at a lower
// data version than read before, at the same version with another mzxid,
// at a higher one with an mzxid not higher, or gone. In one history of
// ZooKeeper none of these can happen to a session that syncs before it
// reads. The event spans the watch's last read of the earlier history
// (CallNs) to its first of the later one (RetNs).
func (z *ZooKeeperEnsemble) WatchHistory(ctx context.Context, emit func(record.Event)) {
	var conn *zk.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	gen, seen, lastRead := -1, map[string]znodeSeen{}, int64(0)
	for sleepUntil(ctx, time.Now().Add(historyPoll)) {
		if g := z.restores.get(); conn == nil || g != gen {
			if conn != nil {
				conn.Close()
			}
			var err error
			if conn, _, err = zk.Connect(z.ClientAddrs(), 6*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietZK{})); err != nil {
				conn = nil
				continue
			}
			gen, seen = g, map[string]znodeSeen{}
		}
		call := record.Now()
		now, err := readHistory(conn)
		if err != nil || z.restores.get() != gen {
			continue
		}
		if back := historyWentBack(seen, now); back != "" && lastRead != 0 {
			emit(record.Event{Kind: record.KindRegression, Proc: "orchestrator", CallNs: lastRead, RetNs: record.Now(),
				Result: record.ResultOK, Detail: "the store went back: " + back})
		}
		seen, lastRead = now, call
	}
}

// readHistory syncs and reads the revision node and every record.
func readHistory(conn *zk.Conn) (map[string]znodeSeen, error) {
	if _, err := conn.Sync(zkstore.DefaultRoot); err != nil {
		return nil, err
	}
	out := map[string]znodeSeen{}
	_, st, err := conn.Get(watchRevPath)
	if err != nil {
		return nil, err
	}
	out[watchRevPath] = znodeSeen{st.Version, st.Mzxid}
	names, _, err := conn.Children(watchRecordsDir)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		p := path.Join(watchRecordsDir, n)
		if _, st, err := conn.Get(p); err == nil {
			out[p] = znodeSeen{st.Version, st.Mzxid}
		} else if err != zk.ErrNoNode {
			return nil, err
		}
	}
	return out, nil
}

// historyWentBack names the nodes of now that went back from seen, ""
// when none did.
func historyWentBack(seen, now map[string]znodeSeen) string {
	var back []string
	for p, was := range seen {
		n, ok := now[p]
		d := int32(uint32(n.version) - uint32(was.version)) // versions wrap
		switch {
		case !ok:
			back = append(back, fmt.Sprintf("%s gone (was version %d)", p, was.version))
		case d < 0 || d == 0 && n.mzxid != was.mzxid || d > 0 && n.mzxid <= was.mzxid:
			back = append(back, fmt.Sprintf("%s version %d (mzxid %#x) after %d (mzxid %#x)", p, n.version, n.mzxid, was.version, was.mzxid))
		}
	}
	sort.Strings(back)
	return strings.Join(back, "; ")
}

// quietZK drops the watch's client log lines (members are killed on
// purpose).
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}
