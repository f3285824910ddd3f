//go:build unix

package lockexec

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/internal/childproc"
)

// supervise runs the child while the lease is certain. It stops the
// child when the lease's ownership context ends (OWNERSHIP_UNKNOWN,
// EXPIRED, a release) or ctx ends (the wrapper was told to stop), and
// returns once the child has exited and nothing is left of its process
// group (EndGroup: the child's own children too).
func supervise(ctx context.Context, cfg Config, hs []*client.Lease) (Result, error) {
	l := hs[0]
	own := l.Ctx() // taken before the child starts: a later renewal never revives it
	if cfg.ignoreOwnership {
		own = context.Background()
	}
	dir, err := os.MkdirTemp("", "fencegate-lock-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	helper, err := serveEnvelopes(filepath.Join(dir, "envelope.sock"), hs)
	if err != nil {
		return Result{}, err
	}
	defer helper.Close()
	var g *guardian
	if len(cfg.Guardian) > 0 { // first: without it, start nothing
		if g, err = startGuardian(cfg.Guardian, cfg.Log); err != nil {
			return Result{}, err
		}
	}
	defer g.done()
	std, err := newStdio(cfg.Stdin, cfg.Stdout, cfg.Stderr)
	if err != nil {
		return Result{}, fmt.Errorf("lockexec: %w", err)
	}
	defer std.drain()
	cmd, err := startChild(cfg, hs, helper.path, std)
	if err != nil { // nothing ran; ownership may already be uncertain
		return Result{ExitCode: 1, Lost: l.Ctx().Err() != nil, LostState: l.State()}, err
	}
	g.watch(cmd.Process.Pid)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()

	var res Result
	select {
	case <-exited:
	case <-own.Done():
		res.Lost, res.LostState = true, l.State()
		fmt.Fprintf(cfg.Log, "%s: ownership of %s is no longer certain (%s): stopping the child\n", cfg.Name, cfg.held(), res.LostState)
		stop(cmd.Process.Pid, exited, cfg.Grace, cfg.Log, cfg.Name)
	case <-ctx.Done():
		fmt.Fprintf(cfg.Log, "%s: told to stop: stopping the child, then releasing %s\n", cfg.Name, cfg.held())
		stop(cmd.Process.Pid, exited, cfg.Grace, cfg.Log, cfg.Name)
	}
	<-exited
	res.ExitCode = exitCode(cmd.ProcessState)
	switch term, kill := childproc.EndGroup(cmd.Process.Pid, cfg.Grace); {
	case kill:
		fmt.Fprintf(cfg.Log, "%s: the child left processes in its process group: SIGTERM, then SIGKILL after %s\n", cfg.Name, cfg.Grace)
	case term:
		fmt.Fprintf(cfg.Log, "%s: the child left processes in its process group: SIGTERM\n", cfg.Name)
	}
	return res, nil
}

// startChild starts the child in a process group of its own (so that a
// shell's children are stopped with it), with the grant in its
// environment. It starts nothing when ownership is already uncertain.
func startChild(cfg Config, hs []*client.Lease, socket string, std *stdio) (*exec.Cmd, error) {
	defer std.started()
	env, err := childEnv(hs, socket)
	if err != nil {
		return nil, fmt.Errorf("lockexec: %w", err)
	}
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = std.in, std.out, std.errOut
	cmd.Env = append(append(os.Environ(), cfg.Env...), env...)
	cmd.SysProcAttr = childproc.SysProcAttr() // dies with the wrapper: no renewals, no child
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("lockexec: start %s: %w", cfg.Command, err)
	}
	return cmd, nil
}

// stop sends SIGTERM to the child's process group, and SIGKILL if it has
// not exited after grace.
func stop(pid int, exited <-chan struct{}, grace time.Duration, log interface{ Write([]byte) (int, error) }, name string) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	_ = syscall.Kill(-pid, syscall.SIGCONT) // a stopped child must run to handle it
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		fmt.Fprintf(log, "%s: the child did not exit %s after SIGTERM: SIGKILL\n", name, grace)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// exitCode is the child's status the way a shell reports it: its exit
// code, or 128+N for a signal N.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return 1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return max(ps.ExitCode(), 0)
}

// childEnv is what the child learns about its grant (hs: the lease's
// handles; a lock set's, one per member, give EnvLockSet and each
// member's variables instead of one grant's). It fails if ownership is
// already uncertain. It builds no envelope: an envelope nobody settles
// would hold the lease for its proof's life after the child exits.
func childEnv(hs []*client.Lease, socket string) ([]string, error) {
	l, g := hs[0], hs[0].Grant()
	if err := l.Ctx().Err(); err != nil {
		return nil, fmt.Errorf("%w: lease %s is %s", client.ErrNotCertain, g.Lease, l.State())
	}
	common := []string{
		EnvOwner + "=" + g.Owner,
		EnvOperationID + "=" + l.OperationID(),
		EnvEnvelopeSocket + "=" + socket,
	}
	if len(hs) == 1 {
		return append(common,
			EnvResource+"="+g.Resource,
			EnvLease+"="+g.Lease,
			EnvFence+"="+strconv.FormatUint(g.FenceToken, 10),
			EnvGrant+"="+string(g.Encode()),
			EnvGrantProof+"="+l.GrantProof(),
		), nil
	}
	members := make([]string, len(hs))
	for i, h := range hs {
		mg := h.Grant()
		members[i] = mg.Resource
		common = append(common,
			MemberEnv(i, EnvMemberResource)+"="+mg.Resource,
			MemberEnv(i, EnvMemberLease)+"="+mg.Lease,
			MemberEnv(i, EnvMemberFence)+"="+strconv.FormatUint(mg.FenceToken, 10),
			MemberEnv(i, EnvMemberGrant)+"="+string(mg.Encode()),
			MemberEnv(i, EnvMemberGrantProof)+"="+h.GrantProof(),
		)
	}
	return append(common, EnvLockSet+"="+strings.Join(members, " ")), nil
}
