//go:build unix

package lockexec

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// The guardian ends the child's process group when the wrapper dies
// without doing so itself (kill -9, a crash, the OOM killer): the
// kernel's parent-death signal reaches only the child, never the
// processes the child started, which would run on with nobody holding
// the lease.
//
// It is a process of its own (Config.Guardian; `fencegate lock` runs its
// own binary's hidden `lock-guard`), started before the child in a
// process group of its own, so a signal to the wrapper's group does not
// reach it; it ignores SIGINT, SIGTERM, SIGHUP and SIGQUIT. Its stdin is
// a pipe only the wrapper holds the other end of. The wrapper writes
//
//	pgid N     once the child runs, in its process group N
//	done       once it has ended group N itself (or started nothing)
//
// and the guardian exits at "done". At end of file without "done" (the
// kernel closed the pipe: the wrapper is gone), it sends SIGKILL to
// group N: every process of the child's tree that stayed in its group
// dies at once. A process that left the group (setsid, a daemon's double
// fork) escapes it: run such a command in a cgroup of its own
// (systemd-run --scope) if it must not outlive the wrapper.
const (
	guardianPgid = "pgid"
	guardianDone = "done"
)

// guardian is the wrapper's side: the running guardian and the pipe.
type guardian struct {
	cmd *exec.Cmd
	w   *os.File
}

// startGuardian runs argv as the guardian. Its stderr is the wrapper's
// when that is a file, else discarded (a pipe the wrapper drains would
// break when the wrapper dies, before the guardian could say anything).
func startGuardian(argv []string, log io.Writer) (*guardian, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("lockexec: guardian: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = r
	if f, ok := log.(*os.File); ok {
		cmd.Stderr = f
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("lockexec: guardian %s: %w", strings.Join(argv, " "), err)
	}
	return &guardian{cmd: cmd, w: w}, nil
}

// watch tells the guardian the child's process group.
func (g *guardian) watch(pgid int) {
	if g != nil {
		fmt.Fprintf(g.w, "%s %d\n", guardianPgid, pgid)
	}
}

// done tells the guardian the group is ended (or nothing ran) and waits
// for it to exit.
func (g *guardian) done() {
	if g == nil {
		return
	}
	fmt.Fprintln(g.w, guardianDone)
	g.w.Close()
	_ = g.cmd.Wait()
}

// Guard is the guardian's body, for the binary that runs it
// (Config.Guardian): it reads the wrapper's lines from in until "done"
// (exit 0, nothing done) or end of file, when it sends SIGKILL to the
// process group it was told, and says so on log. It ignores the signals
// a terminal or a service manager sends a whole session (SIGINT, SIGTERM,
// SIGHUP, SIGQUIT) and SIGPIPE, so that only the wrapper's end ends it.
func Guard(in io.Reader, log io.Writer) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	pgid := 0
	s := bufio.NewScanner(in)
	for s.Scan() {
		word, arg, _ := strings.Cut(s.Text(), " ")
		switch word {
		case guardianDone:
			return 0
		case guardianPgid:
			if n, err := strconv.Atoi(arg); err == nil && n > 1 {
				pgid = n
			}
		}
	}
	if pgid == 0 {
		return 0
	}
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if err == nil {
		fmt.Fprintf(log, "fencegate lock-guard: the wrapper is gone: killed the child's process group %d\n", pgid)
	}
	return 0
}
