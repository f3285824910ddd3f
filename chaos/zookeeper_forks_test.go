// Proves the checker reads a ZooKeeper fork inside one epoch from the
// members' logs (a truncation followed by a snapshot load above it, as
// zk3 logged it in seed 207), and only that: a load at or below the
// truncation (the usual reload), a load with no truncation before it (a
// start), or one long after, is none. And the verdict it gives: a run
// that survived a fork passes with the fork printed, a failed one names
// the fork among its failures.
package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func TestZKForks(t *testing.T) {
	at := time.Date(2026, 12, 7, 14, 8, 32, 898e6, time.UTC) // seed 207's truncation, as zk3 logged it
	trunc := func(d time.Duration, z string) string {
		return at.Add(d).Format(zkLogTime) + " [QuorumPeer[myid=3](plain=127.0.0.1:1)(secure=disabled)] WARN org.apache.zookeeper.server.quorum.Learner - Truncating log to get in sync with the leader 0x" + z + "\n"
	}
	load := func(d time.Duration, z string) string {
		return at.Add(d).Format(zkLogTime) + " [QuorumPeer[myid=3](plain=127.0.0.1:1)(secure=disabled)] INFO org.apache.zookeeper.server.ZKDatabase - Snapshot loaded in 2 ms, highest zxid is 0x" + z + ", digest is 130237895264\n"
	}
	for _, c := range []struct {
		name string
		log  string
		want string
	}{
		{"seed 207: a snapshot above the truncation", trunc(0, "200000002") + "noise\n" + load(10*time.Millisecond, "200000004"),
			"zk3 truncated its log to 0x200000002, then at 14:08:32.908 loaded a snapshot reaching 0x200000004"},
		{"the usual reload, below the truncation", trunc(0, "200000002") + load(10*time.Millisecond, "200000001"), ""},
		{"at the truncation", trunc(0, "200000002") + load(10*time.Millisecond, "200000002"), ""},
		{"a start, no truncation", load(0, "200000004"), ""},
		{"a load long after", trunc(0, "200000002") + load(time.Minute, "300000004"), ""},
		{"one truncation, two loads", trunc(0, "200000002") + load(10*time.Millisecond, "200000001") + load(20*time.Millisecond, "200000004"), ""},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "zk3.log"), []byte(c.log), 0o600); err != nil {
			t.Fatal(err)
		}
		forks, err := zkForks(dir)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.want == "" && len(forks) != 0:
			t.Errorf("%s: forks %v, want none", c.name, forks)
		case c.want != "" && (len(forks) != 1 || !strings.Contains(forks[0].String(), c.want)):
			t.Errorf("%s: forks %v, want one saying %q", c.name, forks, c.want)
		}
	}
	if forks, err := zkForks(""); err != nil || len(forks) != 0 {
		t.Errorf("no store directory (an etcd run): %v, %v", forks, err)
	}
}

func TestForkInTheVerdict(t *testing.T) {
	fork := zkFork{member: "zk3", truncTo: 0x200000002, loaded: 0x200000004}.String()
	survived := &Report{Verdict: porcupine.Ok, EngineForks: []string{fork}}
	if f := survived.Failures(true); len(f) != 0 {
		t.Errorf("a run that survived the fork fails: %v", f)
	}
	if !strings.Contains(survived.String(), fork) {
		t.Errorf("the report of a run that survived the fork does not print it:\n%s", survived)
	}
	failed := &Report{Verdict: porcupine.Illegal, EngineForks: []string{fork}}
	f := failed.Failures(true)
	if len(f) != 2 || f[0] != "porcupine: Illegal" || f[1] != "on a store that forked: "+fork {
		t.Errorf("a failed run on a store that forked: %q; want Illegal, then the fork named", f)
	}
}
