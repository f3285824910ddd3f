// Package zktest starts a real, standalone ZooKeeper server (the jar of
// Debian's zookeeper package, run with the system's java) in a temporary
// directory on free loopback ports, for the zkstore tests and serve's
// --zookeeper tests, and a replicated ensemble of such members
// (ensemble.go) for the chaos suite. It is a test helper: without java or the jar it
// skips the test, unless FENCEGATE_REQUIRE_ZK=1 (CI), which turns the
// skip into a failure. The product never imports it.
package zktest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Environment variables.
const (
	EnvRequire = "FENCEGATE_REQUIRE_ZK"  // "1": a missing ZooKeeper fails the test
	EnvJar     = "FENCEGATE_TEST_ZK_JAR" // the zookeeper jar (default /usr/share/java/zookeeper.jar)
)

// DefaultJar is where Debian's zookeeper package puts the server; its
// manifest names the jars it needs.
const DefaultJar = "/usr/share/java/zookeeper.jar"

// extraJars are on the class path when present: slf4j's simple logger
// (the server's log file gets warnings and above), and the Netty jars the
// TLS port needs that the Debian jar's manifest leaves out.
var extraJars = []string{
	"/usr/share/java/slf4j-simple.jar",
	"/usr/share/java/netty-codec.jar",
	"/usr/share/java/netty-resolver.jar",
	"/usr/share/java/netty-transport-native-unix-common.jar",
}

// StartTimeout bounds a start: the JVM and the server, on a busy machine.
const StartTimeout = 30 * time.Second

// Options tunes a server.
type Options struct {
	// TLS adds a secureClientPort with a throwaway PKI requiring client
	// certificates. Optional, defaults to plain only.
	TLS bool
	// Fsync makes the server fsync its transaction log, as in production
	// (benchmarks). Optional, defaults to off: a test server.
	Fsync bool
	// JuteMaxBufferBytes sets the server's jute.maxbuffer, the largest
	// request (and znode) it takes. Optional, defaults to ZooKeeper's
	// (1 MiB less a byte).
	JuteMaxBufferBytes int
	// DataDir puts the server's snapshots and transaction log there
	// instead of under its directory (a small file system, to fill).
	// Optional.
	DataDir string
	// Properties are more Java system properties for the server
	// ("-Dzookeeper.preAllocSize=64"). Optional.
	Properties []string
}

// Server is one running standalone ZooKeeper.
type Server struct {
	Addr    string // host:port of the plain client port
	TLSAddr string // host:port of the secureClientPort ("" without TLS)
	PKI     *PKI   // nil without TLS
	Dir     string // config, data and log

	fsync   bool
	jute    int      // jute.maxbuffer, 0: the default
	dataDir string   // snapshots and transaction log
	props   []string // more -D settings
	proc    *process // nil before the first start
	runs    int
}

// Available reports why no server can start here, or nil.
func Available() error {
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("zktest: no java on PATH (apt-get install zookeeper brings it)")
	}
	if _, err := os.Stat(jar()); err != nil {
		return fmt.Errorf("zktest: no ZooKeeper jar at %s (apt-get install zookeeper, or set %s)", jar(), EnvJar)
	}
	return nil
}

func jar() string {
	if p := os.Getenv(EnvJar); p != "" {
		return p
	}
	return DefaultJar
}

// SkipOrFail skips tb because err says ZooKeeper is unavailable, or fails
// it under FENCEGATE_REQUIRE_ZK=1.
func SkipOrFail(tb testing.TB, err error) {
	tb.Helper()
	if os.Getenv(EnvRequire) == "1" {
		tb.Fatalf("%v, and %s=1", err, EnvRequire)
	}
	tb.Skipf("SKIPPING: %v", err)
}

// Start starts a server for tb and stops it when tb ends.
func Start(tb testing.TB, opt Options) *Server {
	tb.Helper()
	if err := Available(); err != nil {
		SkipOrFail(tb, err)
	}
	s, err := New(tb.TempDir(), opt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Stop() })
	return s
}

// New starts a server in dir (created if missing) and waits until it
// serves. Stop stops it; dir stays.
func New(dir string, opt Options) (*Server, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, fsync: opt.Fsync, jute: opt.JuteMaxBufferBytes, dataDir: opt.DataDir, props: opt.Properties}
	if s.dataDir == "" {
		s.dataDir = filepath.Join(dir, "data")
	}
	if err := os.MkdirAll(s.dataDir, 0o700); err != nil {
		return nil, err
	}
	if opt.TLS {
		pki, err := NewPKI(dir)
		if err != nil {
			return nil, err
		}
		s.PKI = pki
	}
	// Free ports are picked, then bound by the server: another process
	// may take one in between, so a start that fails is retried.
	var err error
	for try := 1; try <= startTries; try++ {
		if s.Addr, err = freePort(); err != nil {
			return nil, err
		}
		if opt.TLS {
			if s.TLSAddr, err = freePort(); err != nil {
				return nil, err
			}
		}
		if err = s.start(); err == nil {
			return s, nil
		}
	}
	return nil, err
}

// startTries bounds the attempts at binding free ports.
const startTries = 3

// config is the server's zoo.cfg: a short tick (sessions of 0.4 to 4 s
// may be asked), no fsync unless asked, no admin server, ruok and srvr
// for the probes.
func (s *Server) config() string {
	forceSync := "no"
	if s.fsync {
		forceSync = "yes"
	}
	cfg := fmt.Sprintf(`tickTime=200
initLimit=10
syncLimit=5
dataDir=%s
clientPortAddress=127.0.0.1
clientPort=%s
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
forceSync=%s
`, s.dataDir, port(s.Addr), forceSync)
	if s.PKI != nil {
		cfg += fmt.Sprintf(`serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
secureClientPort=%s
ssl.keyStore.location=%s
ssl.keyStore.type=PEM
ssl.trustStore.location=%s
ssl.trustStore.type=PEM
ssl.clientAuth=need
`, port(s.TLSAddr), s.PKI.ServerKeyStore, s.PKI.CAFile)
	}
	return cfg
}

// start writes the config, runs the JVM and waits for ruok.
func (s *Server) start() error {
	cfgPath := filepath.Join(s.Dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(s.config()), 0o600); err != nil {
		return err
	}
	s.runs++
	logPath := filepath.Join(s.Dir, fmt.Sprintf("server-%d.log", s.runs))
	var err error
	props := s.props
	if s.jute > 0 {
		props = append(props, fmt.Sprintf("-Djute.maxbuffer=%d", s.jute))
	}
	if s.proc, err = startProcess(javaCommand("org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath, props...), logPath); err != nil {
		return fmt.Errorf("zktest: start java: %w", err)
	}
	deadline := time.Now().Add(StartTimeout)
	for {
		if ruok(s.Addr) {
			return nil
		}
		select {
		case <-s.proc.exited:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("zktest: ZooKeeper exited before serving:\n%s", tail(log))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = s.Stop()
			return fmt.Errorf("zktest: ZooKeeper not serving after %s", StartTimeout)
		}
	}
}

// Stop kills the server (as a crash would) and waits for it to exit.
func (s *Server) Stop() error { return s.proc.kill() }

// Restart starts the server again on the same ports, with the data it
// has (or the data put into Dir/data while it was stopped).
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.start()
}

// DataDir is the server's data directory (snapshots and transaction log).
func (s *Server) DataDir() string { return s.dataDir }

// Zxid returns the last transaction id the server applied (its srvr
// four-letter answer): sessions and every write, not only commits.
func (s *Server) Zxid() (uint64, error) {
	conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Zxid: "); ok {
			return strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64)
		}
	}
	return 0, fmt.Errorf("zktest: no Zxid in srvr's answer")
}

// ruok asks the server's four-letter ruok; true on "imok".
func ruok(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("ruok")); err != nil {
		return false
	}
	line, _ := bufio.NewReader(conn).ReadString('\n')
	return strings.HasPrefix(line, "imok")
}

// freePort returns a free loopback address a server can be restarted on
// (RestartablePorts).
func freePort() (string, error) {
	ps, err := RestartablePorts(1)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", ps[0]), nil
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func tail(b []byte) string {
	const max = 4000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}
