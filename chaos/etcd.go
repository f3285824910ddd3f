package chaos

import (
	"bufio"
	"context"
	"fmt"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Timing of the etcd cluster: a tenth of a second heartbeat and a one
// second election timeout (etcd's defaults), so a lost leader is replaced
// within a few seconds of a fault.
const (
	etcdHeartbeatMs    = 100
	etcdElectionMs     = 1000
	etcdHealthyTimeout = 30 * time.Second
)

// etcdMember is one member of the cluster: its ports, the proxy every
// other member reaches its peer port through, and its process.
type etcdMember struct {
	name       string
	clientPort int
	peerPort   int
	peerProxy  *Proxy
	proc       *Proc
	dataDir    string
}

// EtcdCluster is a real three-member etcd cluster of `etcd` processes
// (Debian's etcd-server), each reachable by its peers only through its
// peer proxy, so members can be killed, restarted, cut from each other and
// restored from a snapshot (etcdctl) while the registry runs on it.
type EtcdCluster struct {
	bin, ctl string
	dir      string
	members  []*etcdMember
	token    string // initial-cluster-token of the current generation
	gen      int    // 0 at start, +1 per restore

	mu  sync.Mutex
	ids map[string]string // member ID (hex) → name; peer proxy faults are keyed by ID
	cli *clientv3.Client  // the orchestrator's own client, straight to the members
}

// startEtcd creates and starts the cluster's members under dir.
func startEtcd(ctx context.Context, procs *Procs, bins Binaries, dir string, seed uint64) (*EtcdCluster, error) {
	c := &EtcdCluster{bin: bins.Etcd, ctl: bins.Etcdctl, dir: dir, token: fmt.Sprintf("chaos-%d-0", seed), ids: map[string]string{}}
	ports, err := freePorts(6)
	if err != nil {
		return nil, err
	}
	for i := range 3 {
		m := &etcdMember{name: fmt.Sprintf("etcd%d", i+1), clientPort: ports[2*i], peerPort: ports[2*i+1]}
		if m.peerProxy, err = NewProxy("peer>"+m.name, fmt.Sprintf("127.0.0.1:%d", m.peerPort), seed+uint64(i), sniffPeer); err != nil {
			return nil, err
		}
		m.dataDir = filepath.Join(dir, m.name+"-0")
		m.proc = procs.Add(&Proc{Name: m.name, Path: c.bin, Log: filepath.Join(dir, m.name+".log")})
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		m.proc.Args = c.args(m, "new")
		if err := m.proc.Start(); err != nil {
			return nil, err
		}
	}
	c.cli, err = clientv3.New(clientv3.Config{Endpoints: c.ClientURLs(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	return c, c.waitHealthy(ctx)
}

func (c *EtcdCluster) initialCluster() string {
	var parts []string
	for _, m := range c.members {
		parts = append(parts, fmt.Sprintf("%s=http://%s", m.name, m.peerProxy.Addr()))
	}
	return strings.Join(parts, ",")
}

func (c *EtcdCluster) args(m *etcdMember, state string) []string {
	client := fmt.Sprintf("http://127.0.0.1:%d", m.clientPort)
	return []string{
		"--name", m.name, "--data-dir", m.dataDir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", m.peerPort),
		"--initial-advertise-peer-urls", "http://" + m.peerProxy.Addr(),
		"--initial-cluster", c.initialCluster(), "--initial-cluster-state", state,
		"--initial-cluster-token", c.token,
		"--heartbeat-interval", fmt.Sprint(etcdHeartbeatMs), "--election-timeout", fmt.Sprint(etcdElectionMs),
		"--logger", "zap", "--log-level", "warn",
	}
}

// ClientURLs returns the members' client URLs.
func (c *EtcdCluster) ClientURLs() []string {
	var out []string
	for _, a := range c.ClientAddrs() {
		out = append(out, "http://"+a)
	}
	return out
}

// Engine returns BackendEtcd.
func (c *EtcdCluster) Engine() string { return BackendEtcd }

// ClientAddrs returns the members' client addresses (host:port).
func (c *EtcdCluster) ClientAddrs() []string {
	var out []string
	for _, m := range c.members {
		out = append(out, fmt.Sprintf("127.0.0.1:%d", m.clientPort))
	}
	return out
}

// ServeArgs returns --etcd-endpoints with an http URL per address.
func (c *EtcdCluster) ServeArgs(addrs []string) []string {
	var eps []string
	for _, a := range addrs {
		eps = append(eps, "http://"+a)
	}
	return []string{"--etcd-endpoints", strings.Join(eps, ",")}
}

// sniffPeer reads the first request's headers of a peer connection and
// returns the ID of the member that sent it (rafthttp sets X-Server-From
// on streams, pipelines and snapshots); faults on peer proxies are keyed
// by member ID, which a connection made before the orchestrator learned
// the IDs carries too. The bytes stay in r for the upstream.
func sniffPeer(r *bufio.Reader) string {
	for n := 512; n <= proxyChunkBytesMax; n *= 2 {
		b, err := r.Peek(n)
		if i := strings.Index(string(b), "\r\n\r\n"); i >= 0 {
			tr := textproto.NewReader(bufio.NewReader(strings.NewReader(string(b[:i+4]))))
			tr.ReadLine() // request line
			h, _ := tr.ReadMIMEHeader()
			return strings.ToLower(h.Get("X-Server-From"))
		}
		if err != nil {
			return ""
		}
	}
	return ""
}

// waitHealthy waits until every member answers and one leads, then learns
// the member IDs the peer proxies need.
func (c *EtcdCluster) waitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, etcdHealthyTimeout)
	defer cancel()
	for {
		if _, err := c.Leader(ctx); err == nil {
			if err := c.learnIDs(ctx); err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: etcd cluster not healthy: %w (logs in %s)", ctx.Err(), c.dir)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *EtcdCluster) learnIDs(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := c.cli.MemberList(ctx)
	if err != nil {
		return err
	}
	ids := map[string]string{}
	for _, m := range resp.Members {
		ids[fmt.Sprintf("%x", m.ID)] = m.Name
	}
	if len(ids) != len(c.members) {
		return fmt.Errorf("chaos: %d members listed", len(ids))
	}
	c.mu.Lock()
	c.ids = ids
	c.mu.Unlock()
	return nil
}

// Leader returns the name of the member every live member agrees leads.
func (c *EtcdCluster) Leader(ctx context.Context) (string, error) {
	leaders := map[uint64]bool{}
	for _, m := range c.members {
		if !m.proc.Running() {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := c.cli.Status(sctx, fmt.Sprintf("127.0.0.1:%d", m.clientPort))
		cancel()
		if err != nil {
			return "", err
		}
		leaders[st.Leader] = true
	}
	if len(leaders) != 1 {
		return "", fmt.Errorf("chaos: members disagree on the leader: %v", leaders)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range leaders {
		if n, ok := c.ids[fmt.Sprintf("%x", id)]; ok || len(c.ids) == 0 {
			return n, nil
		}
	}
	return "", fmt.Errorf("chaos: leader unknown")
}

// member returns the member called name.
func (c *EtcdCluster) member(name string) *etcdMember {
	for _, m := range c.members {
		if m.name == name {
			return m
		}
	}
	panic("chaos: no etcd member " + name)
}

// ctlEnv is etcdctl's environment: the v3 API.
func ctlEnv() []string { return append(os.Environ(), "ETCDCTL_API=3") }

// Snapshot saves a snapshot with etcdctl from the first member that
// answers, after a linearizable read through that member: the member has
// then applied every commit made before the call, so the snapshot holds
// every grant answered before it (Restorer).
func (c *EtcdCluster) Snapshot(ctx context.Context, path string) error {
	var last error
	for _, m := range c.members {
		for _, args := range [][]string{{"get", "--consistency=l", "chaos-snapshot-barrier"}, {"snapshot", "save", path}} {
			cmd := exec.CommandContext(ctx, c.ctl, append([]string{"--endpoints", fmt.Sprintf("http://127.0.0.1:%d", m.clientPort),
				"--dial-timeout", "2s", "--command-timeout", "10s"}, args...)...)
			cmd.Env = ctlEnv()
			out, err := cmd.CombinedOutput()
			if last = nil; err != nil {
				last = fmt.Errorf("chaos: etcdctl %s via %s: %w: %s", args[0], m.name, err, out)
				break
			}
		}
		if last == nil {
			return nil
		}
	}
	return last
}
