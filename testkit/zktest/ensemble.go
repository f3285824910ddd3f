package zktest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Timing of an ensemble, in ticks of EnsembleTickMs: a follower has
// ensembleInitTicks (6 s) to sync with a new leader, on a busy machine
// with cold JVMs, and a leader and its followers give each other up after
// ensembleSyncTicks (1.8 s) without an answer, so a lost leader is
// replaced within a few seconds. Sessions may last 2 to 20 ticks (0.6 to
// 6 s); a client asking longer is given 6 s.
const (
	EnsembleTickMs     = 300
	ensembleInitTicks  = 20
	ensembleSyncTicks  = 6
	EnsembleMembersDef = 3
)

// EnsembleOptions tunes an ensemble.
type EnsembleOptions struct {
	// Members is the number of members. Optional, defaults to
	// EnsembleMembersDef (3).
	Members int
	// PeerAddr says where member from reaches member to's quorum port
	// (the port a follower opens its connection to the leader on): given
	// to's real quorum address, it returns the address written for to in
	// from's zoo.cfg. Optional: nil writes the real addresses. A chaos
	// test returns a proxy of its own there, which it can cut. Election
	// ports are always written as they are: ZooKeeper answers a
	// connection on its election port by connecting back to the address
	// the peer advertises (its own), so a proxy there would see only part
	// of the election traffic.
	PeerAddr func(from, to int, addr string) string
	// LogLevel is the members' log level (slf4j's simple logger: "warn",
	// "info", "debug"). Optional, defaults to "warn". A chaos run asks
	// "info": elections, and how each member synced with its leader
	// (DIFF, TRUNC, SNAP), are what explain a store that went back.
	LogLevel string
}

// Ensemble is a ZooKeeper ensemble of real members (QuorumPeerMain over
// Debian's jar) on free loopback ports, each with its own directory,
// myid and zoo.cfg. PrepareEnsemble writes the files and starts nothing:
// a caller that manages processes itself runs each Member.Command; the
// others call Start (or StartEnsemble in a test).
type Ensemble struct {
	Dir     string
	Members []*Member
}

// Member is one member of an Ensemble.
type Member struct {
	ID           int    // myid, 1..n
	Addr         string // client port, host:port
	QuorumAddr   string // where it listens for followers, host:port
	ElectionAddr string // where it listens for election votes, host:port
	Dir          string // zoo.cfg, data/ (myid, snapshots, logs), server-N.log
	logLevel     string // slf4j's defaultLogLevel

	proc *process // when started by Start
	runs int
}

// StartEnsemble prepares and starts an ensemble for tb, waits until it
// serves with a leader, and kills its members when tb ends. It skips (or
// fails, under FENCEGATE_REQUIRE_ZK=1) without java or the jar.
func StartEnsemble(tb testing.TB, opt EnsembleOptions) *Ensemble {
	tb.Helper()
	if err := Available(); err != nil {
		SkipOrFail(tb, err)
	}
	e, err := PrepareEnsemble(tb.TempDir(), opt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Stop)
	for _, m := range e.Members {
		if err := m.Start(); err != nil {
			tb.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*StartTimeout)
	defer cancel()
	if err := e.WaitServing(ctx); err != nil {
		tb.Fatal(err)
	}
	return e
}

// PrepareEnsemble picks the members' ports and writes each member's
// directory under dir (created if missing): data/myid and zoo.cfg.
func PrepareEnsemble(dir string, opt EnsembleOptions) (*Ensemble, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	n := opt.Members
	if n <= 0 {
		n = EnsembleMembersDef
	}
	e := &Ensemble{Dir: dir}
	ports, err := RestartablePorts(3 * n)
	if err != nil {
		return nil, err
	}
	for i := 1; i <= n; i++ {
		addr := func(j int) string { return fmt.Sprintf("127.0.0.1:%d", ports[3*(i-1)+j]) }
		m := &Member{ID: i, Addr: addr(0), QuorumAddr: addr(1), ElectionAddr: addr(2), Dir: filepath.Join(dir, fmt.Sprintf("zk%d", i)), logLevel: opt.LogLevel}
		if err := os.MkdirAll(m.DataDir(), 0o700); err != nil {
			return nil, err
		}
		e.Members = append(e.Members, m)
	}
	for _, m := range e.Members {
		if err := m.WriteMyID(); err != nil {
			return nil, err
		}
		if err := os.WriteFile(m.configPath(), []byte(e.config(m, opt.PeerAddr)), 0o600); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// config is member m's zoo.cfg: the ensemble's timing, no fsync (a test
// ensemble), no admin server, ruok and srvr for the probes, and a
// server.N line per member with m's view of the others' quorum ports.
func (e *Ensemble) config(m *Member, peerAddr func(from, to int, addr string) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `tickTime=%d
initLimit=%d
syncLimit=%d
dataDir=%s
clientPortAddress=127.0.0.1
clientPort=%s
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
forceSync=no
reconfigEnabled=false
`, EnsembleTickMs, ensembleInitTicks, ensembleSyncTicks, m.DataDir(), port(m.Addr))
	for _, o := range e.Members {
		q := o.QuorumAddr
		if o != m && peerAddr != nil {
			q = peerAddr(m.ID, o.ID, q)
		}
		fmt.Fprintf(&b, "server.%d=%s:%s\n", o.ID, q, port(o.ElectionAddr))
	}
	return b.String()
}

// Servers returns the members' client addresses.
func (e *Ensemble) Servers() []string {
	var out []string
	for _, m := range e.Members {
		out = append(out, m.Addr)
	}
	return out
}

// Member returns the member whose myid is id, or nil.
func (e *Ensemble) Member(id int) *Member {
	for _, m := range e.Members {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// Leader returns the myid of the one member that says it leads; an
// error when none does, or more than one.
func (e *Ensemble) Leader() (int, error) {
	var leaders []int
	for _, m := range e.Members {
		if mode, err := m.Mode(); err == nil && mode == "leader" {
			leaders = append(leaders, m.ID)
		}
	}
	if len(leaders) != 1 {
		return 0, fmt.Errorf("zktest: %d members lead (%v)", len(leaders), leaders)
	}
	return leaders[0], nil
}

// WaitServing waits until every member in skip's complement serves and
// one of them leads. skip lists members known to be down.
func (e *Ensemble) WaitServing(ctx context.Context, skip ...int) error {
	for {
		err := e.serving(skip)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zktest: ensemble in %s not serving: %w (last: %v)", e.Dir, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (e *Ensemble) serving(skip []int) error {
	leaders := 0
	for _, m := range e.Members {
		if contains(skip, m.ID) {
			continue
		}
		mode, err := m.Mode()
		if err != nil {
			return err
		}
		if mode == "leader" {
			leaders++
		}
	}
	if leaders != 1 {
		return fmt.Errorf("zktest: %d leaders", leaders)
	}
	return nil
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Stop kills every member Start started and waits for each.
func (e *Ensemble) Stop() {
	for _, m := range e.Members {
		_ = m.Kill()
	}
}

// DataDir is the member's data directory: myid, and version-2/ with its
// snapshots, transaction logs and epochs.
func (m *Member) DataDir() string { return filepath.Join(m.Dir, "data") }

func (m *Member) configPath() string { return filepath.Join(m.Dir, "zoo.cfg") }

// WriteMyID writes the member's myid into its data directory (again, after
// the directory was replaced by a copy of another member's).
func (m *Member) WriteMyID() error {
	return os.WriteFile(filepath.Join(m.DataDir(), "myid"), []byte(fmt.Sprintf("%d\n", m.ID)), 0o600)
}

// electionNotifyMsMax caps the pause between a looking member's rounds
// of votes (ZooKeeper's default doubles it up to 60 s): members started
// seconds apart, as after a kill -9 or a restore, elect in about a
// second instead of waiting out the doubling.
const electionNotifyMsMax = 1000

// Command is the member's command line: java running QuorumPeerMain on
// its zoo.cfg. A caller that manages processes itself runs it as is.
func (m *Member) Command() []string {
	argv := javaCommand("org.apache.zookeeper.server.quorum.QuorumPeerMain", m.configPath())
	opts := []string{fmt.Sprintf("-Dzookeeper.fastleader.maxNotificationInterval=%d", electionNotifyMsMax)}
	if m.logLevel != "" {
		// After javaCommand's "warn": the last -D of a name wins.
		opts = append(opts, "-Dorg.slf4j.simpleLogger.defaultLogLevel="+m.logLevel,
			"-Dorg.slf4j.simpleLogger.showDateTime=true", "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ")
	}
	cp := slices.Index(argv, "-cp")
	return slices.Concat(argv[:cp], opts, argv[cp:])
}

// Start runs the member (it must not be running); its output goes to
// server-N.log in its directory. It does not wait: see WaitServing.
func (m *Member) Start() error {
	if m.proc.running() {
		return fmt.Errorf("zktest: member %d is running", m.ID)
	}
	m.runs++
	p, err := startProcess(m.Command(), filepath.Join(m.Dir, fmt.Sprintf("server-%d.log", m.runs)))
	if err != nil {
		return fmt.Errorf("zktest: start member %d: %w", m.ID, err)
	}
	m.proc = p
	return nil
}

// Kill kills a member Start started (as a crash would) and waits for it.
func (m *Member) Kill() error { return m.proc.kill() }

// Mode asks the member's four-letter srvr: "leader", "follower" (or
// "standalone"); an error when it does not answer or does not serve (no
// quorum, or still syncing).
func (m *Member) Mode() (string, error) {
	conn, err := net.DialTimeout("tcp", m.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("zktest: member %d is not serving", m.ID)
}

// javaCommand is the command line running a ZooKeeper main class on
// cfgPath with the jar and the extra jars present.
// props are more -D settings.
func javaCommand(mainClass, cfgPath string, props ...string) []string {
	cp := jar()
	for _, j := range extraJars {
		if _, err := os.Stat(j); err == nil {
			cp += ":" + j
		}
	}
	return append([]string{"java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dzookeeper.admin.enableServer=false"},
		append(props, "-cp", cp, mainClass, cfgPath)...)
}
