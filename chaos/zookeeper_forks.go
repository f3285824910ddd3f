// The checker's third look at ZooKeeper's members' logs: a fork inside
// one epoch (seed 207, chaos/testdata/zkopen207). ZooKeeper 3.8.0 can
// truncate a member's log to the new leader's history ("Truncating log
// to get in sync with the leader 0xZ") and then reload a snapshot the
// member took beyond Z ("Snapshot loaded ..., highest zxid is 0xW", W >
// Z): the member then serves, in the new epoch, transactions the quorum
// never had, at data versions the quorum's history reaches again with
// other contents. No sync ends that fork (the member follows with the
// lost transactions applied until its next restart), so zkLosses does
// not see it, and a registry answer from that member is not "beyond" the
// leader's zxids. The registry's defence is zkstore's record identity
// (registry/zkstore/identity.go): a commit decided on such a record is
// refused. The suite's verdict (Report.Failures): a fork the run
// survived (porcupine Ok, every count 0) passes and is printed; a run
// that failed on a store that forked names the fork in its failures, so
// a failure the engine's fork explains is never mistaken for the
// registry's own defect, and never passes.

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
)

// forkLoadWindowMs bounds how long after a member's truncation the
// snapshot it loads belongs to that sync (zk3 in seed 207: 10 ms).
const forkLoadWindowMs = 5_000

// zkTruncLine matches a member's truncation to a history ending at 0xZ;
// zkSnapLoadLine a snapshot loaded, and its highest zxid.
var (
	zkTruncLine    = regexp.MustCompile(`^(\S+) .*Truncating log to get in sync with the leader 0x([0-9a-f]+)`)
	zkSnapLoadLine = regexp.MustCompile(`^(\S+) .*Snapshot loaded in .*highest zxid is 0x([0-9a-f]+)`)
)

// zkFork is one member that loaded, right after its truncation to
// truncTo, a snapshot reaching loaded > truncTo.
type zkFork struct {
	member          string
	atNs            int64 // the snapshot's load
	truncTo, loaded uint64
}

func (f zkFork) String() string {
	return fmt.Sprintf("ZooKeeper forked: %s truncated its log to %#x, then at %s loaded a snapshot reaching %#x, and served transactions (%#x, %#x] the quorum does not hold",
		f.member, f.truncTo, time.Unix(0, f.atNs).UTC().Format("15:04:05.000"), f.loaded, f.truncTo, f.loaded)
}

// zkForks reads every such fork from storeDir/zk*.log, in time order.
// No logs (an etcd run), no forks.
func zkForks(storeDir string) ([]zkFork, error) {
	files, err := filepath.Glob(filepath.Join(storeDir, "zk*.log"))
	if err != nil || storeDir == "" {
		return nil, err
	}
	var out []zkFork
	for _, f := range files {
		fs, err := readZKForks(f, strings.TrimSuffix(filepath.Base(f), ".log"))
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].atNs < out[j].atNs })
	return out, nil
}

// readZKForks reads one member's log: each truncation followed, within
// forkLoadWindowMs, by a snapshot load above it.
func readZKForks(f, member string) ([]zkFork, error) {
	fh, err := os.Open(f)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var out []zkFork
	var trunc *zkFork // the last truncation, until a snapshot is loaded
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := zkTruncLine.FindStringSubmatch(line)
		load := false
		if m == nil {
			if m = zkSnapLoadLine.FindStringSubmatch(line); m == nil {
				continue
			}
			load = true
		}
		at, err1 := time.Parse(zkLogTime, m[1])
		z, err2 := strconv.ParseUint(m[2], 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		switch {
		case !load:
			trunc = &zkFork{member: member, atNs: at.UnixNano(), truncTo: z}
		case trunc != nil:
			if z > trunc.truncTo && at.UnixNano()-trunc.atNs <= forkLoadWindowMs*int64(time.Millisecond) {
				out = append(out, zkFork{member: member, atNs: at.UnixNano(), truncTo: trunc.truncTo, loaded: z})
			}
			trunc = nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("chaos: %s: %w", f, err)
	}
	return out, nil
}
