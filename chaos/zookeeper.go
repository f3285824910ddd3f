package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/testkit/zktest"
)

// zkHealthyTimeout bounds waiting for the ensemble to serve with a leader:
// three cold JVMs on a busy machine, then an election.
const zkHealthyTimeout = 60 * time.Second

// ZooKeeperEnsemble is a real three-member ZooKeeper ensemble (Debian's
// jar, QuorumPeerMain, files written by zktest.PrepareEnsemble), each
// member one Proc of the run so that it can be killed, restarted, frozen
// and thawed. Every member reaches every other's quorum port (a
// follower's connection to its leader) through a proxy of its own, so
// two members can be cut from each other. Election ports are not proxied
// (zktest.EnsembleOptions.PeerAddr says why), so a cut leader could win
// the next election again: LoseLeader freezes the leader instead, past
// the followers' sync limit, and thaws it into a follower (a zombie
// leader for an instant). It is a Restorer: a follower's data directory
// copied, and later every member's replaced by the copy.
type ZooKeeperEnsemble struct {
	ens      *zktest.Ensemble
	procs    []*Proc           // by member, in myid order
	quorum   map[[2]int]*Proxy // [from, to] myid: from's way to to's quorum port
	restores restoreGen        // WatchHistory starts over at each
}

// startZooKeeper writes and starts the ensemble under dir and waits until
// it serves with a leader.
func startZooKeeper(ctx context.Context, procs *Procs, dir string, seed uint64) (*ZooKeeperEnsemble, error) {
	if err := zktest.Available(); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	z := &ZooKeeperEnsemble{quorum: map[[2]int]*Proxy{}}
	var proxyErr error
	peer := func(from, to int, addr string) string {
		px, err := NewProxy(fmt.Sprintf("peer zk%d>zk%d", from, to), addr, seed+uint64(10*from+to), nil)
		if err != nil {
			proxyErr = err
			return addr
		}
		z.quorum[[2]int{from, to}] = px
		return px.Addr()
	}
	ens, err := zktest.PrepareEnsemble(dir, zktest.EnsembleOptions{PeerAddr: peer, LogLevel: "info"})
	if err == nil {
		err = proxyErr
	}
	if err != nil {
		z.Close()
		return nil, err
	}
	z.ens = ens
	for _, m := range ens.Members {
		argv := m.Command()
		name := zkName(m.ID)
		z.procs = append(z.procs, procs.Add(&Proc{Name: name, Path: argv[0], Args: argv[1:], Log: filepath.Join(dir, name+".log")}))
	}
	for _, p := range z.procs {
		if err := p.Start(); err != nil {
			return z, err
		}
	}
	return z, z.waitHealthy(ctx)
}

func zkName(id int) string { return fmt.Sprintf("zk%d", id) }

// zkID is the myid of member name.
func zkID(name string) int {
	var id int
	if _, err := fmt.Sscanf(name, "zk%d", &id); err != nil {
		panic("chaos: no ZooKeeper member " + name)
	}
	return id
}

func (z *ZooKeeperEnsemble) proc(name string) *Proc { return z.procs[zkID(name)-1] }

// waitHealthy waits until every running member serves and one leads.
func (z *ZooKeeperEnsemble) waitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, zkHealthyTimeout)
	defer cancel()
	var down []int
	for _, m := range z.ens.Members {
		if !z.procs[m.ID-1].Running() {
			down = append(down, m.ID)
		}
	}
	if err := z.ens.WaitServing(ctx, down...); err != nil {
		return fmt.Errorf("chaos: %w (logs in %s)", err, z.ens.Dir)
	}
	return nil
}

// Engine returns BackendZooKeeper.
func (z *ZooKeeperEnsemble) Engine() string { return BackendZooKeeper }

// ClientAddrs returns the members' client addresses.
func (z *ZooKeeperEnsemble) ClientAddrs() []string { return z.ens.Servers() }

// ServeArgs returns --zookeeper with the addresses.
func (z *ZooKeeperEnsemble) ServeArgs(addrs []string) []string {
	return []string{"--zookeeper", strings.Join(addrs, ",")}
}

// Names returns zk1, zk2, zk3.
func (z *ZooKeeperEnsemble) Names() []string {
	var out []string
	for _, m := range z.ens.Members {
		out = append(out, zkName(m.ID))
	}
	return out
}

// Leader returns the one member whose srvr says it leads. A frozen
// member does not answer; a thawed former leader may still say it leads
// for an instant, and then two do, which is an error here.
func (z *ZooKeeperEnsemble) Leader(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	id, err := z.ens.Leader()
	if err != nil {
		return "", fmt.Errorf("chaos: %w", err)
	}
	return zkName(id), nil
}

// KillMember kills member name with SIGKILL.
func (z *ZooKeeperEnsemble) KillMember(name string) { z.proc(name).Kill() }

// RestartMember starts a killed member again on its data directory.
func (z *ZooKeeperEnsemble) RestartMember(name string) error {
	if p := z.proc(name); !p.Running() {
		return p.Start()
	}
	return nil
}

// FreezeMember stops member name with SIGSTOP.
func (z *ZooKeeperEnsemble) FreezeMember(name string) error { return z.proc(name).Freeze() }

// ThawMember sends SIGCONT to a frozen member.
func (z *ZooKeeperEnsemble) ThawMember(name string) {
	if p := z.proc(name); p.Frozen() {
		p.Thaw()
	}
}

// LoseLeader freezes the leader (on) or thaws it (off).
func (z *ZooKeeperEnsemble) LoseLeader(name string, on bool) {
	if on {
		z.FreezeMember(name)
		return
	}
	z.ThawMember(name)
}

// Cut black-holes the quorum traffic between members a and b, both ways,
// or heals it: a follower cut from its leader stops serving and looks
// for a leader it can reach.
func (z *ZooKeeperEnsemble) Cut(a, b string, on bool) {
	f := LinkFault{Blackhole: on}
	ia, ib := zkID(a), zkID(b)
	z.quorum[[2]int{ia, ib}].Set("", f)
	z.quorum[[2]int{ib, ia}].Set("", f)
}

// Isolate cuts member name's quorum traffic with every other member, or
// heals it.
func (z *ZooKeeperEnsemble) Isolate(name string, on bool) {
	for _, o := range z.Names() {
		if o != name {
			z.Cut(name, o, on)
		}
	}
}

// Close closes the quorum proxies.
func (z *ZooKeeperEnsemble) Close() {
	for _, px := range z.quorum {
		px.Close()
	}
}

// Snapshot saves a copy of a follower's data directory (snapshots,
// transaction logs, epochs) at path, a directory: the follower is synced
// with its leader first (ZooKeeper's sync, on a session of its own), so
// the copy holds every transaction committed before the call (every
// grant answered before it: Restorer), and frozen with SIGSTOP for the
// copy, so the copy is what a crash at that instant would leave, which
// ZooKeeper recovers from.
func (z *ZooKeeperEnsemble) Snapshot(ctx context.Context, path string) error {
	leader, err := z.Leader(ctx)
	if err != nil {
		return err
	}
	for _, m := range z.ens.Members {
		p := z.procs[m.ID-1]
		if zkName(m.ID) == leader || !p.Running() || p.Frozen() || syncMember(ctx, m.Addr) != nil {
			continue
		}
		if err := p.Freeze(); err != nil {
			return err
		}
		defer p.Thaw()
		if err := os.RemoveAll(path); err != nil {
			return err
		}
		return copyDir(ctx, m.DataDir(), path)
	}
	return fmt.Errorf("chaos: no running follower that syncs with its leader to copy")
}

// syncMemberTimeout bounds a session and a sync with one member.
const syncMemberTimeout = 5 * time.Second

// syncMember brings the member at addr up to date with its leader
// (ZooKeeper's sync, on a session with that member alone).
func syncMember(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, syncMemberTimeout)
	defer cancel()
	conn, events, err := zk.Connect([]string{addr}, syncMemberTimeout, zk.WithLogInfo(false), zk.WithLogger(quietZK{}))
	if err != nil {
		return err
	}
	defer conn.Close()
	for {
		select {
		case ev := <-events:
			if ev.State != zk.StateHasSession {
				continue
			}
			_, err := conn.Sync("/")
			return err
		case <-ctx.Done():
			return fmt.Errorf("chaos: no session with %s: %w", addr, ctx.Err())
		}
	}
}

// Restore replaces every member's data directory with the copy at path,
// as an operator restoring an ensemble from one member's backup would:
// every member is killed, given the copy (and its own myid), and started
// again on the same addresses. The ensemble's history goes back to the
// copy; zxids are handed out again, and a client that saw a later zxid
// is refused (ReplicasNeedRestart).
func (z *ZooKeeperEnsemble) Restore(ctx context.Context, path string) error {
	defer z.restores.next() // what the watch read while restoring is no history
	for _, n := range z.Names() {
		z.Isolate(n, false)
		z.proc(n).Kill()
	}
	// Only now is the earlier history out of the watch's reach: a read
	// that ends after this began before it, or reads the copy.
	z.restores.next()
	for _, m := range z.ens.Members {
		if err := os.RemoveAll(m.DataDir()); err != nil {
			return err
		}
		if err := copyDir(ctx, path, m.DataDir()); err != nil {
			return err
		}
		if err := m.WriteMyID(); err != nil {
			return err
		}
	}
	for _, p := range z.procs {
		if err := p.Start(); err != nil {
			return err
		}
	}
	return z.waitHealthy(ctx)
}

// ReplicasNeedRestart is true: ZooKeeper refuses a session whose client
// has seen a later zxid than the server has, and the restored ensemble's
// next epoch is the copy's plus one, so after an election since the copy
// a replica's client retries until the new zxids pass the ones it saw,
// which may take as many commits as were lost; an operator restarts the
// replicas.
func (z *ZooKeeperEnsemble) ReplicasNeedRestart() bool { return true }

// copyDir copies directory from to to (which must not exist) with cp -a,
// which keeps ZooKeeper's preallocated logs sparse.
func copyDir(ctx context.Context, from, to string) error {
	if out, err := exec.CommandContext(ctx, "cp", "-a", from, to).CombinedOutput(); err != nil {
		return fmt.Errorf("chaos: cp -a %s %s: %w: %s", from, to, err, out)
	}
	return nil
}
