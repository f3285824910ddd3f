//go:build unix

// Package lockexec runs a command while holding a fencegate lease, as
// `etcdctl lock` and `consul lock` do, for `fencegate lock`: it acquires
// (waiting as long as asked), keeps the lease renewed, starts the child
// with the grant in its environment and an envelope helper beside it,
// stops the child the moment ownership stops being certain (SIGTERM to
// its process group, SIGKILL after a grace period), releases when the
// child is done, and reports the child's exit status.
//
// A lease can be lost at any moment without the holder knowing (a pause,
// a partition): stopping the child is best effort, and what keeps a
// stopped-too-late child's write out is the gate's fence check. A child
// that writes to a protected resource should take each write's envelope
// from the helper (`fencegate envelope`), which refuses once ownership is
// uncertain, and send it with the write.
package lockexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/wire"
)

// Environment variables the child receives.
const (
	EnvResource       = "FENCEGATE_RESOURCE"        // the resource held
	EnvOwner          = "FENCEGATE_OWNER"           // the grant's owner (the lock's identity)
	EnvLease          = "FENCEGATE_LEASE"           // the registry's lease ID
	EnvFence          = "FENCEGATE_FENCE"           // the grant's fence token, decimal
	EnvOperationID    = "FENCEGATE_OPERATION_ID"    // the operation the grant's root binds
	EnvGrant          = "FENCEGATE_GRANT"           // the lockGrant.v1 canonical text
	EnvGrantProof     = "FENCEGATE_GRANT_PROOF"     // the registry's proof over it
	EnvEnvelopeSocket = "FENCEGATE_ENVELOPE_SOCKET" // the envelope helper's unix socket
)

// Environment variables a lock set's child receives (Config.Set), beside
// EnvOwner, EnvOperationID and EnvEnvelopeSocket: the members, and each
// member's grant under its index I (0, 1, …, in the set's sorted order).
// EnvResource, EnvLease, EnvFence, EnvGrant and EnvGrantProof are not set
// for a set: a set has no one grant.
const (
	EnvLockSet = "FENCEGATE_LOCKSET" // the members, sorted, separated by one space
	// EnvMemberPrefix + I + "_" + one of the suffixes below, e.g.
	// FENCEGATE_MEMBER_0_FENCE: member I's resource, lease, fence,
	// grant text and grant proof.
	EnvMemberPrefix     = "FENCEGATE_MEMBER_"
	EnvMemberResource   = "RESOURCE"
	EnvMemberLease      = "LEASE"
	EnvMemberFence      = "FENCE"
	EnvMemberGrant      = "GRANT"
	EnvMemberGrantProof = "GRANT_PROOF"
)

// MemberEnv is the name of member i's variable suffix (EnvMemberResource,
// …): FENCEGATE_MEMBER_<i>_<suffix>.
func MemberEnv(i int, suffix string) string {
	return EnvMemberPrefix + strconv.Itoa(i) + "_" + suffix
}

// Defaults of Config.
const (
	GraceDefault          = 10 * time.Second // SIGTERM → SIGKILL
	ReleaseTimeoutDefault = 30 * time.Second // the release, drain included
)

// Config is one `fencegate lock` run.
type Config struct {
	Session *client.Session     // required
	Request wire.AcquireRequest // WaitMs is ignored: see Wait
	// Set, when it names two or more resources, makes the run hold them
	// as one lock set (Session.LockSet: all at once or none, whatever
	// order they are named in) instead of Request.Resource; Request
	// gives the operation, class and TTL. Optional.
	Set []string
	// Wait is how long to queue for the resource: 0 waits until ctx ends;
	// negative does not wait (a held resource fails at once).
	Wait time.Duration
	// Command and Args are the child; Command is looked up in PATH.
	Command string
	Args    []string
	// Env is added to the child's environment (this process's, then
	// the grant's). Optional.
	Env []string
	// Grace is how long the child has between SIGTERM and SIGKILL, and
	// what the child leaves in its process group once it exits.
	// Optional, defaults to GraceDefault.
	Grace time.Duration
	// Guardian is the command (argv) of a guardian process that ends the
	// child's process group if this process dies without doing so (see
	// Guard; `fencegate lock` runs its own binary's hidden
	// `lock-guard`). Optional: without one, only the child itself dies
	// with this process (the kernel's parent-death signal, on Linux), and
	// the processes it started run on.
	Guardian []string
	// ReleaseTimeout bounds the release (at most the lease's TTL once
	// ownership was lost). Optional, defaults to ReleaseTimeoutDefault.
	ReleaseTimeout time.Duration
	// Stdin, Stdout, Stderr are the child's; Log gets the wrapper's own
	// lines. Optional: nil is os.Stdin / os.Stdout / os.Stderr.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Log            io.Writer
	// Name prefixes the wrapper's own lines. Optional, defaults to
	// "fencegate lock".
	Name string

	// ignoreOwnership turns the protection off: the child is not stopped
	// when ownership is lost. Tests only, the negative control.
	ignoreOwnership bool
}

// Result is how a run ended.
type Result struct {
	// ExitCode is the child's exit status, 128+N if a signal N ended it.
	ExitCode int
	// Lost is set when ownership stopped being certain while the child
	// ran (the child was stopped for it).
	Lost bool
	// LostState is the lease state that stopped the child.
	LostState client.LeaseState
}

// ErrAcquire wraps a failure to get the lease (nothing was started).
var ErrAcquire = errors.New("lockexec: acquire")

// Run acquires, runs the child, and releases. Its error is about the
// wrapper (acquire, start, release); the child's own failure is in
// Result.ExitCode.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg.defaults()
	hs, err := acquire(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	l := hs[0] // a set's handles share its state, context and release
	res, runErr := supervise(ctx, cfg, hs)
	timeout := cfg.ReleaseTimeout
	if res.Lost {
		// Ownership was lost (often: the registry is unreachable). By one
		// TTL from now the registry has ended the lease on its own, so
		// trying longer only delays the exit.
		timeout = min(timeout, time.Duration(l.Grant().TTLMs)*time.Millisecond)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if n := l.Unsettled(); n > 0 && !res.Lost {
		fmt.Fprintf(cfg.Log, "%s: %d envelope(s) of %s not settled (fencegate envelope settle): the write may still land, so the release waits until its proof lapses, about %s\n",
			cfg.Name, n, cfg.held(), time.Until(l.DrainUntil()).Round(100*time.Millisecond))
	}
	if err := l.Release(rctx); err != nil && runErr == nil {
		runErr = fmt.Errorf("lockexec: release %s: %w (the lease ends on its own at its TTL)", cfg.held(), err)
	}
	return res, runErr
}

// held names what the run holds in its lines: the resource, or the set.
func (c *Config) held() string {
	if len(c.Set) > 0 {
		return "lock set " + strings.Join(c.Set, " ")
	}
	return c.Request.Resource
}

func (c *Config) defaults() {
	if c.Grace <= 0 {
		c.Grace = GraceDefault
	}
	if c.ReleaseTimeout <= 0 {
		c.ReleaseTimeout = ReleaseTimeoutDefault
	}
	if c.Stdin == nil {
		c.Stdin = os.Stdin
	}
	if c.Stdout == nil {
		c.Stdout = os.Stdout
	}
	if c.Stderr == nil {
		c.Stderr = os.Stderr
	}
	if c.Log == nil {
		c.Log = os.Stderr
	}
	if c.Name == "" {
		c.Name = "fencegate lock"
	}
}

// acquire queues for the lease (Session.Lock: one request ID, keeping its
// place in the queue) until it is granted, --wait is over, or ctx ends;
// with a negative Wait it asks once and does not queue. It returns the
// lease's handles: one, or a lock set's, one per member in member order.
func acquire(ctx context.Context, cfg Config) ([]*client.Lease, error) {
	lctx := ctx
	if cfg.Wait > 0 {
		// Lock ends its queueing CallTimeout before its deadline, so the
		// registry's WAIT_TIMEOUT (naming the holder) arrives in time.
		var cancel context.CancelFunc
		lctx, cancel = context.WithTimeout(ctx, cfg.Wait+cfg.Session.Options().CallTimeout)
		defer cancel()
	}
	if len(cfg.Set) > 0 {
		return acquireSet(ctx, lctx, cfg)
	}
	var l *client.Lease
	var err error
	if cfg.Wait < 0 {
		req := cfg.Request
		req.WaitMs = 0
		l, err = cfg.Session.Acquire(ctx, req)
	} else {
		l, err = cfg.Session.Lock(lctx, cfg.Request)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAcquire, err)
	}
	return []*client.Lease{l}, nil
}

// acquireSet is acquire for a lock set.
func acquireSet(ctx, lctx context.Context, cfg Config) ([]*client.Lease, error) {
	req := wire.LockSetRequest{Members: cfg.Set, OperationID: cfg.Request.OperationID,
		OperationClass: cfg.Request.OperationClass, TTLMs: cfg.Request.TTLMs}
	var ls *client.LockSet
	var err error
	if cfg.Wait < 0 {
		ls, err = cfg.Session.AcquireSet(ctx, req)
	} else {
		ls, err = cfg.Session.LockSet(lctx, req)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAcquire, err)
	}
	return ls.Leases(), nil
}
