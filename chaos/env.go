package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
)

// readyTimeout bounds waiting for a serve replica or a service to answer.
const readyTimeout = 30 * time.Second

// adminIdentity is the orchestrator's identity at the registry.
const adminIdentity = "chaos-admin"

// Binaries are the executables a run starts.
type Binaries struct {
	Fencegate string // go build ./cmd/fencegate
	Chaosproc string // go build ./chaos/cmd/chaosproc
	Etcd      string // Debian's etcd-server (etcd runs only)
	Etcdctl   string // Debian's etcd-client (etcd runs only)
}

// party is a process reached through proxies: a serve replica or a
// resource service.
type party struct {
	name string
	port int
	proc *Proc

	mu   sync.Mutex
	held bool // down on purpose: the supervisor leaves it alone
}

func (p *party) url() string { return fmt.Sprintf("http://127.0.0.1:%d", p.port) }

// Env is one run's system: the store's cluster, the serve replicas, the
// resource services, the workers, every link's proxy, and the
// orchestrator's own handles on the registry and the gate.
type Env struct {
	cfg      Config
	procs    Procs
	coord    Coordinator
	serves   []*party
	services []*party
	workers  []*Proc
	links    []*Proxy // every proxy but the store's peer ones
	tokens   map[string]string

	supervised atomic.Int64 // replicas the supervisor started again

	admin  []*httpclient.Client // one per serve replica, straight (not through a proxy)
	db     *sql.DB
	gate   *sqlgate.Gate
	bundle string
}

// logPath is where a process's output goes.
func (e *Env) logPath(name string) string { return filepath.Join(e.cfg.Dir, "logs", name+".log") }

// EventsPath is the history file of process name.
func (e *Env) EventsPath(name string) string {
	return filepath.Join(e.cfg.Dir, "events", name+".jsonl")
}

func (e *Env) fencegate(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, e.cfg.Bins.Fencegate, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("chaos: fencegate %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// setupKeys makes the one signing key every replica shares, its trust
// bundle for the services, and the token file of every identity.
func (e *Env) setupKeys(ctx context.Context) error {
	key := filepath.Join(e.cfg.Dir, "k1.key")
	e.bundle = filepath.Join(e.cfg.Dir, "trust-bundle.json")
	if err := e.fencegate(ctx, "keys", "gen", "--id", "k1", "--out", key); err != nil {
		return err
	}
	if err := e.fencegate(ctx, "keys", "bundle", "add", "--bundle", e.bundle, "--key", key); err != nil {
		return err
	}
	e.tokens = map[string]string{adminIdentity: fmt.Sprintf("chaos-admin-token-%016x", e.cfg.Seed)}
	for i := range e.cfg.Workers {
		n := workerName(i)
		e.tokens[n] = fmt.Sprintf("chaos-token-%s-%016x", n, e.cfg.Seed)
	}
	var lines []string
	for id, tok := range e.tokens {
		lines = append(lines, tok+" "+id)
	}
	return os.WriteFile(e.tokenFile(), []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

func (e *Env) tokenFile() string { return filepath.Join(e.cfg.Dir, "tokens") }

func workerName(i int) string { return fmt.Sprintf("worker-%02d", i+1) }

// startServes starts the serve replicas, each reaching every store member
// through a link proxy of its own.
func (e *Env) startServes(ctx context.Context) error {
	ports, err := freePorts(e.cfg.Replicas)
	if err != nil {
		return err
	}
	for i := range e.cfg.Replicas {
		p := &party{name: fmt.Sprintf("serve%d", i+1), port: ports[i]}
		var eps []string
		names := e.coord.Names()
		for j, a := range e.coord.ClientAddrs() {
			px, err := e.proxy(p.name+">"+names[j], a)
			if err != nil {
				return err
			}
			eps = append(eps, px.Addr())
		}
		args := append([]string{"serve", "--data-dir", filepath.Join(e.cfg.Dir, p.name), "--key", filepath.Join(e.cfg.Dir, "k1.key")},
			e.coord.ServeArgs(eps)...)
		p.proc = e.procs.Add(&Proc{Name: p.name, Path: e.cfg.Bins.Fencegate, Log: e.logPath(p.name), Args: append(args,
			"--token-file", e.tokenFile(), "--listen", fmt.Sprintf("127.0.0.1:%d", p.port), "--admin", adminIdentity,
			"--authz-open", // the suite tests fencing, not who may lock what: every worker locks every resource
		)})
		if err := p.proc.Start(); err != nil {
			return err
		}
		c, err := httpclient.NewClient(p.url(), httpclient.WithBearerToken(e.tokens[adminIdentity]))
		if err != nil {
			return err
		}
		e.serves, e.admin = append(e.serves, p), append(e.admin, c)
	}
	for _, p := range e.serves {
		if err := waitHTTP(ctx, p.url()+"/readyz"); err != nil {
			return fmt.Errorf("chaos: %s: %w (log %s)", p.name, err, p.proc.Log)
		}
	}
	return nil
}

// startServices starts the resource services one after the other (the
// first migrates the gate's tables) and opens the orchestrator's gate.
func (e *Env) startServices(ctx context.Context) error {
	ports, err := freePorts(e.cfg.Services)
	if err != nil {
		return err
	}
	for i := range e.cfg.Services {
		p := &party{name: fmt.Sprintf("service%d", i+1), port: ports[i]}
		args := []string{"service", "--name", p.name, "--listen", fmt.Sprintf("127.0.0.1:%d", p.port), "--dsn", e.cfg.DSN,
			"--bundle", e.bundle, "--token-file", e.tokenFile(), "--events", e.EventsPath(p.name)}
		if e.cfg.Mutant {
			args = append(args, "--mutant-no-fence")
		}
		p.proc = e.procs.Add(&Proc{Name: p.name, Path: e.cfg.Bins.Chaosproc, Log: e.logPath(p.name), Args: args})
		if err := p.proc.Start(); err != nil {
			return err
		}
		if err := waitTCP(ctx, fmt.Sprintf("127.0.0.1:%d", p.port)); err != nil {
			return fmt.Errorf("chaos: %s: %w (log %s)", p.name, err, p.proc.Log)
		}
		e.services = append(e.services, p)
	}
	if e.db, err = sql.Open("pgx", e.cfg.DSN); err != nil {
		return err
	}
	b, err := grant.LoadBundle(e.bundle)
	if err != nil {
		return err
	}
	if e.gate, err = sqlgate.New(sqlgate.Config{Dialect: sqlgate.Postgres, Policy: gate.Policy{Verifier: grant.NewVerifier(b, 0)}}); err != nil {
		return err
	}
	if e.cfg.Mutant {
		return nil
	}
	return e.gate.Migrate(ctx, e.db)
}

// startWorkers starts the workers, each with its own proxy to every
// serve replica and every service.
func (e *Env) startWorkers() error {
	for i := range e.cfg.Workers {
		n := workerName(i)
		var regs, svcs []string
		for _, lst := range []struct {
			to  []*party
			out *[]string
		}{{e.serves, &regs}, {e.services, &svcs}} {
			for _, p := range lst.to {
				px, err := e.proxy(n+">"+p.name, fmt.Sprintf("127.0.0.1:%d", p.port))
				if err != nil {
					return err
				}
				*lst.out = append(*lst.out, "http://"+px.Addr())
			}
		}
		w := e.procs.Add(&Proc{Name: n, Path: e.cfg.Bins.Chaosproc, Log: e.logPath(n), Args: []string{
			"worker", "--name", n, "--token", e.tokens[n], "--registries", strings.Join(regs, ","),
			"--services", strings.Join(svcs, ","), "--resources", strings.Join(e.cfg.resources(), ","),
			"--semaphores", strings.Join(e.cfg.semaphores(), ","), "--permits", fmt.Sprint(e.cfg.Permits),
			"--rwlocks", strings.Join(e.cfg.rwlocks(), ","),
			"--ttl-ms", fmt.Sprint(e.cfg.TTLMs), "--seed", fmt.Sprint(e.cfg.Seed*1000 + uint64(i)),
			"--events", e.EventsPath(n),
		}})
		if err := w.Start(); err != nil {
			return err
		}
		e.workers = append(e.workers, w)
	}
	return nil
}

func (e *Env) proxy(name, target string) (*Proxy, error) {
	px, err := NewProxy(name, target, e.cfg.Seed*7919+uint64(len(e.links)), nil)
	if err != nil {
		return nil, err
	}
	e.links = append(e.links, px)
	return px, nil
}
