package chaos

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"
)

// Restore replaces the whole cluster's state with the snapshot at path, as
// an operator restoring a backup would: every member is killed, a fresh
// data directory is made from the snapshot with etcdctl under a new
// cluster token, and the members start again on the same addresses. The
// registry's clients reconnect to a store whose history went back to the
// snapshot: fences, leases and request IDs issued since are forgotten.
func (c *EtcdCluster) Restore(ctx context.Context, snap string) error {
	for _, m := range c.members {
		m.proc.Kill()
		m.peerProxy.Heal()
	}
	c.gen++
	c.token = fmt.Sprintf("%s-r%d", c.token, c.gen)
	c.mu.Lock()
	c.ids = map[string]string{} // new cluster, new member IDs
	c.mu.Unlock()
	for _, m := range c.members {
		m.dataDir = filepath.Join(c.dir, fmt.Sprintf("%s-%d", m.name, c.gen))
		cmd := exec.CommandContext(ctx, c.ctl, "snapshot", "restore", snap, "--name", m.name, "--data-dir", m.dataDir,
			"--initial-cluster", c.initialCluster(), "--initial-cluster-token", c.token,
			"--initial-advertise-peer-urls", "http://"+m.peerProxy.Addr())
		cmd.Env = ctlEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("chaos: etcdctl snapshot restore for %s: %w: %s", m.name, err, out)
		}
		m.proc.Args = c.args(m, "new")
	}
	for _, m := range c.members {
		if err := m.proc.Start(); err != nil {
			return err
		}
	}
	return c.waitHealthy(ctx)
}

// ReplicasNeedRestart is false: a serve replica's etcd client reconnects
// to the restored cluster by itself.
func (c *EtcdCluster) ReplicasNeedRestart() bool { return false }

// KillMember kills member name with SIGKILL.
func (c *EtcdCluster) KillMember(name string) { c.member(name).proc.Kill() }

// FreezeMember stops member name with SIGSTOP.
func (c *EtcdCluster) FreezeMember(name string) error { return c.member(name).proc.Freeze() }

// ThawMember sends SIGCONT to a frozen member.
func (c *EtcdCluster) ThawMember(name string) {
	if p := c.member(name).proc; p.Frozen() {
		p.Thaw()
	}
}

// LoseLeader cuts the leader from both peers (a new leader is elected:
// TestEtcdLeaderLoss), or heals it.
func (c *EtcdCluster) LoseLeader(name string, on bool) { c.Isolate(name, on) }

// RestartMember starts a killed member again on its data directory.
func (c *EtcdCluster) RestartMember(name string) error {
	m := c.member(name)
	if m.proc.Running() {
		return nil
	}
	return m.proc.Start()
}

// Names returns the members' names.
func (c *EtcdCluster) Names() []string {
	var out []string
	for _, m := range c.members {
		out = append(out, m.name)
	}
	return out
}

// Close heals and closes the peer proxies and the orchestrator's client;
// the processes are the run's Procs to kill.
func (c *EtcdCluster) Close() {
	for _, m := range c.members {
		m.peerProxy.Close()
	}
	if c.cli != nil {
		c.cli.Close()
	}
}

// LeaderSeenBy returns the leader member name says there is ("" if none
// it knows).
func (c *EtcdCluster) LeaderSeenBy(ctx context.Context, name string) (string, error) {
	m := c.member(name)
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := c.cli.Status(ctx, fmt.Sprintf("127.0.0.1:%d", m.clientPort))
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[fmt.Sprintf("%x", st.Leader)], nil
}

// Cut black-holes the peer traffic between members a and b (both ways),
// or heals it.
func (c *EtcdCluster) Cut(a, b string, on bool) {
	f := LinkFault{Blackhole: on}
	c.member(a).peerProxy.Set(c.id(b), f)
	c.member(b).peerProxy.Set(c.id(a), f)
}

// id returns member name's current ID in hex (as X-Server-From carries it).
func (c *EtcdCluster) id(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, n := range c.ids {
		if n == name {
			return id
		}
	}
	return "unknown-" + name
}

// Isolate cuts member name from both others, or heals it.
func (c *EtcdCluster) Isolate(name string, on bool) {
	for _, m := range c.members {
		if m.name != name {
			c.Cut(name, m.name, on)
		}
	}
}
