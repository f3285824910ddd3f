package chaos

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/fencegate/fencegate/internal/childproc"
)

// procExitWait bounds waiting for a signalled process to be reaped.
const procExitWait = 10 * time.Second

// Proc is one child process of a run: an etcd member, a serve replica, a
// resource service or a worker. It can be started again after it died
// (kill -9 and restart), frozen and thawed, and it always dies with the
// run (Procs.KillAll, and the kernel's parent-death signal).
type Proc struct {
	Name string
	Path string
	Args []string
	Log  string // stdout and stderr, appended across restarts

	mu      sync.Mutex
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	exited  chan struct{}
	stopped bool // SIGSTOP sent, no SIGCONT yet
}

// Start runs the process; it must not be running.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !isClosed(p.exited) {
		return fmt.Errorf("chaos: %s is already running", p.Name)
	}
	logf, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = childproc.SysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("chaos: start %s: %w", p.Name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	p.cmd, p.stdin, p.exited, p.stopped = cmd, stdin, exited, false
	return nil
}

// Running reports whether the process is alive (possibly frozen).
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !isClosed(p.exited)
}

// Kill sends SIGKILL and waits until the process is reaped.
func (p *Proc) Kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.stopped = false
	p.mu.Unlock()
	if cmd == nil || isClosed(exited) {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(procExitWait):
	}
}

// Freeze sends SIGSTOP; Thaw sends SIGCONT.
func (p *Proc) Freeze() error { return p.signal(syscall.SIGSTOP, true) }

// Thaw sends SIGCONT.
func (p *Proc) Thaw() error { return p.signal(syscall.SIGCONT, false) }

// Frozen reports whether a SIGSTOP is outstanding.
func (p *Proc) Frozen() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}

func (p *Proc) signal(sig syscall.Signal, stopped bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || isClosed(p.exited) {
		return fmt.Errorf("chaos: %s is not running", p.Name)
	}
	p.stopped = stopped
	return p.cmd.Process.Signal(sig)
}

// Send writes one line to the process's standard input.
func (p *Proc) Send(line string) error {
	p.mu.Lock()
	w := p.stdin
	p.mu.Unlock()
	if w == nil {
		return fmt.Errorf("chaos: %s has no stdin", p.Name)
	}
	_, err := io.WriteString(w, line+"\n")
	return err
}

// Stop asks the process to end (SIGTERM, after a SIGCONT) and kills it if
// it has not exited within grace.
func (p *Proc) Stop(grace time.Duration) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil || isClosed(exited) {
		return
	}
	cmd.Process.Signal(syscall.SIGCONT)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		p.Kill()
	}
}

// Procs is every process of a run, so that none outlives it.
type Procs struct {
	mu    sync.Mutex
	procs map[string]*Proc
}

// Add registers p under its unique name and returns it.
func (ps *Procs) Add(p *Proc) *Proc {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.procs == nil {
		ps.procs = map[string]*Proc{}
	}
	if _, dup := ps.procs[p.Name]; dup {
		panic("chaos: duplicate process " + p.Name)
	}
	ps.procs[p.Name] = p
	return p
}

// KillAll kills every process, in name order, and waits for each.
func (ps *Procs) KillAll() {
	ps.mu.Lock()
	names := make([]string, 0, len(ps.procs))
	for n := range ps.procs {
		names = append(names, n)
	}
	ps.mu.Unlock()
	sort.Strings(names)
	for _, n := range names {
		ps.procs[n].Kill()
	}
}

func isClosed(c chan struct{}) bool {
	if c == nil {
		return true
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// waitHTTP waits until u answers 200 (a serve replica's /readyz).
func waitHTTP(ctx context.Context, u string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitTCP waits until addr accepts a connection (a resource service).
func waitTCP(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
