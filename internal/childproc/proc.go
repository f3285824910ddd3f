//go:build unix

package childproc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is one child process whose stdout is read line by line and whose
// stderr is kept (and copied to a log file).
type Proc struct {
	Name   string
	Cmd    *exec.Cmd
	Stdin  io.WriteCloser // nil unless started with stdin
	lines  chan string    // stdout, line by line; closed at EOF
	stderr *SyncBuffer
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

// Start runs bin with args, stdout read by the Proc, stderr kept and
// copied to logPath. With stdin, the child's stdin is a pipe (Proc.Stdin).
// The child dies with this process (SysProcAttr).
func Start(name, bin string, args []string, stdin bool, logPath string) (*Proc, error) {
	p := &Proc{Name: name, lines: make(chan string, 256), stderr: &SyncBuffer{}, exited: make(chan struct{})}
	p.Cmd = exec.Command(bin, args...)
	p.Cmd.SysProcAttr = SysProcAttr()
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p.Cmd.Stderr = io.MultiWriter(p.stderr, logFile)
	out, err := p.Cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if stdin {
		if p.Stdin, err = p.Cmd.StdinPipe(); err != nil {
			logFile.Close()
			return nil, err
		}
	}
	if err := p.Cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			p.lines <- s.Text()
		}
		close(p.lines)
		p.err = p.Cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// Pid is the child's process ID.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Stderr is what the child wrote to stderr so far.
func (p *Proc) Stderr() string { return p.stderr.String() }

// WaitFor feeds the child's stdout lines to match until it reports done,
// the child exits, timeout passes or ctx ends; what names the awaited
// line in errors.
func (p *Proc) WaitFor(ctx context.Context, timeout time.Duration, what string, match func(line string) (done bool, err error)) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				<-p.exited
				return fmt.Errorf("%s exited (%v) before %s:\n%s", p.Name, p.err, what, p.stderr)
			}
			if done, err := match(l); done || err != nil {
				return err
			}
		case <-t.C:
			return fmt.Errorf("%s: no %s after %s:\n%s", p.Name, what, timeout, p.stderr)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Freeze stops the process for real (SIGSTOP) and waits until the kernel
// reports it stopped (Linux /proc; elsewhere SIGSTOP is taken as
// immediate).
func (p *Proc) Freeze() error {
	if err := syscall.Kill(p.Pid(), syscall.SIGSTOP); err != nil {
		return fmt.Errorf("SIGSTOP %s: %w", p.Name, err)
	}
	for i := 0; i < 200 && !stopped(p.Pid()); i++ {
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Thaw resumes a frozen process (SIGCONT).
func (p *Proc) Thaw() error { return syscall.Kill(p.Pid(), syscall.SIGCONT) }

func stopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'T' || b[i+2] == 't'
}

// StopAll resumes and terminates every process still running,
// gracefully first (SIGTERM; SIGKILL after grace), draining their stdout
// so none blocks on it.
func StopAll(ps []*Proc, grace time.Duration) {
	for _, p := range ps {
		select {
		case <-p.exited:
			continue
		default:
		}
		_ = p.Cmd.Process.Signal(syscall.SIGCONT)
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range ps {
		go func() {
			for range p.lines {
			}
		}()
		select {
		case <-p.exited:
		case <-time.After(grace):
			_ = p.Cmd.Process.Kill()
			<-p.exited
		}
	}
}

// SyncBuffer is a strings.Builder safe for a child's concurrent writes.
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
