//go:build unix

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/client/lockexec"
	"github.com/fencegate/fencegate/wire"
)

func init() { register(newLockCmd, newLockGuardianCmd) }

// lockReadyTimeout bounds the registry check before queueing, 5s.
const lockReadyTimeout = 5 * time.Second

const lockLong = `Run COMMAND while holding the lease on RESOURCE, as etcdctl lock and consul
lock do: acquire (queueing up to --wait; a lease granted after any wait is
good for its whole TTL), renew in the background, run the child, release
when it exits, and exit with the child's status (128+N if signal N ended
it). Before the release, what the child started and left in its process
group gets SIGTERM (SIGKILL after --grace): nothing of it runs on once
the lease is given up. The release is at once unless the child took an
envelope it did not settle: then it waits until that envelope's proof can
no longer be accepted (about three seconds), because the write may still
land. If the wrapper itself is killed (kill -9), a guardian process it
started beside the child kills the child's whole process group at once.

The moment ownership stops being certain (a renewal without an answer:
OWNERSHIP_UNKNOWN; the lease expired or was broken; the lease's local
deadline passed), the child's process group gets SIGTERM, and SIGKILL
after --grace. A lease can be lost without anyone knowing (a pause, a
partition), so stopping the child is best effort: what keeps a late write
out is the gate at the resource. A child that writes to a protected
service should take each write's envelope from the helper, send it with
the write, and report the answer:

  fencegate envelope --seq 1 --payload-digest sha256:…   (JSON gate.Mutation)
  fencegate envelope settle --seq 1 --outcome ACCEPTED   (the gate's outcome code)

The child's environment:
  FENCEGATE_RESOURCE         the resource held
  FENCEGATE_OWNER            the grant's owner (your identity)
  FENCEGATE_LEASE            the registry's lease ID
  FENCEGATE_FENCE            the fence token, decimal
  FENCEGATE_OPERATION_ID     the operation the grant binds (--op)
  FENCEGATE_GRANT            the lockGrant.v1 text, as signed
  FENCEGATE_GRANT_PROOF      the registry's proof over it
  FENCEGATE_ENVELOPE_SOCKET  the envelope helper: HTTP on a unix socket, for
                             a child in any language (docs/api.md):
                             GET /v1/envelope?seq=N&payloadDigest=D,
                             POST /v1/settle {"seq":N,"outcome":"ACCEPTED"},
                             GET /v1/lease
  FENCEGATE_BIN              this fencegate binary, for "$FENCEGATE_BIN"
                             envelope without fencegate on PATH (kept if
                             already set)

With several resources before -- (fencegate lock a b -- CMD), the wrapper
holds them as one lock set: all at once or none. A set that cannot have
every member waits in every member's queue holding none of them, so two
wrappers naming the same resources in any order never deadlock, and no
wrapper ever holds part of a set. Each member gets its own grant and fence
(its gate checks only its own resource); the set renews in one registry
transaction, and if any member is lost (a break, an expiry) ownership of
the whole set ends, the child is stopped and the other members are
released. The child learns the members, and each member's grant by its
index I (0, 1, … in sorted order), instead of the one-grant variables
(FENCEGATE_RESOURCE, FENCEGATE_LEASE, FENCEGATE_FENCE, FENCEGATE_GRANT and
FENCEGATE_GRANT_PROOF are not set):
  FENCEGATE_LOCKSET              the members, sorted, separated by spaces
  FENCEGATE_MEMBER_I_RESOURCE    member I's resource
  FENCEGATE_MEMBER_I_LEASE       its lease ID
  FENCEGATE_MEMBER_I_FENCE       its fence token, decimal
  FENCEGATE_MEMBER_I_GRANT       its lockGrant.v1 text, as signed
  FENCEGATE_MEMBER_I_GRANT_PROOF the registry's proof over it
Each envelope names the member whose gate the write goes to, and each
member counts its own segments: fencegate envelope --resource R --seq N …
and fencegate envelope settle --resource R …; on the socket, ?resource=R
and "resource" in the settle body. A set has 2 to 16 members; -n does not
combine with one.

With -n N (--permits), RESOURCE is a counting semaphore of N permits, as
consul lock -n: at most N wrappers hold it at once, each on its own slot,
an ordinary fenced resource named RESOURCE/_slot.I (FENCEGATE_RESOURCE and
FENCEGATE_FENCE are the slot's; its gate keys on it), and waiters queue
FIFO across the slots. Every wrapper of one semaphore must give the same N
(another N is refused: PERMITS_MISMATCH). A permit comes back when its
wrapper releases it or, if the wrapper is frozen or dead, when its TTL runs
out; a frozen holder that wakes later is refused STALE_OWNER at its slot's
gate.

With --read, RESOURCE is a read/write lock and the wrapper holds a
reader's lease: readers share, a wrapper without --read is a writer and
excludes them (a queued writer holds back the readers behind it). The
reader's grant names RESOURCE/_read (FENCEGATE_RESOURCE) with the last
writer's fence; a gate refuses it for writes (READ_GRANT): a reader reads.

docs/operations.md ("What happens when") has the whole contract: every way
a run ends, what the child gets and when, and when the next waiter runs.`

func newLockCmd() *cobra.Command {
	reg := &endpointFlags{name: "registry"}
	var op, class string
	var ttl, wait, grace time.Duration
	var noWait bool
	var permits int
	var read bool
	c := &cobra.Command{
		Use:   "lock RESOURCE [RESOURCE...] [flags] -- COMMAND [ARG...]",
		Short: "run a command while holding a lease; stop it when ownership is lost",
		Long:  lockLong + "\n\n" + exitStatusHelp(),
		Example: `  fencegate lock invoice-batch/2026-07-19 -- ./settle.sh 2026-07-19
  fencegate lock accounts/alice accounts/bob -- ./transfer.sh alice bob 100
  fencegate lock -n 3 pools/db-migrations -- ./migrate-shard.sh
  fencegate lock --read reports/daily -- ./export.sh
  FENCEGATE_TOKEN=… fencegate lock --registry https://registry:7420 --ttl 30s reports/daily -- make report`,
		Args: func(c *cobra.Command, args []string) error {
			dash := c.ArgsLenAtDash()
			if dash < 1 || len(args) <= dash {
				return usagef("want RESOURCE [RESOURCE...] -- COMMAND [ARG...] (the command after --)")
			}
			for _, r := range args[:dash] {
				if err := checkResourceArg(r); err != nil {
					return err
				}
			}
			if dash > 1 {
				if read {
					return usagef("--read takes one RESOURCE, not a lock set of %d", dash)
				}
				return checkLockSet(args[:dash], c.Flags().Changed("permits"))
			}
			if err := checkPermits(args[0], permits, c.Flags().Changed("permits")); err != nil {
				return err
			}
			return checkRead(args[0], read, c.Flags().Changed("permits"))
		},
		RunE: func(c *cobra.Command, args []string) error {
			if op == "" {
				op = "lock-" + randomHex(8)
			}
			if noWait {
				wait = -1
			}
			rc, err := readyRegistry(c, reg)
			if err != nil {
				return err
			}
			s := client.NewSession(rc, client.Options{})
			dash := c.ArgsLenAtDash()
			var set []string
			if dash > 1 {
				set = slices.Sorted(slices.Values(args[:dash]))
			}
			res, err := lockexec.Run(c.Context(), lockexec.Config{
				Session: s, Request: wire.AcquireRequest{Resource: args[0], OperationID: op, OperationClass: class, TTLMs: uint64(ttl.Milliseconds()), Permits: uint64(permits), Mode: modeOf(read)},
				Set:  set,
				Wait: wait, Command: args[dash], Args: args[dash+1:], Env: childExtraEnv(), Grace: grace, Guardian: guardianArgv(c),
				Stdin: c.InOrStdin(), Stdout: c.OutOrStdout(), Stderr: c.ErrOrStderr(), Log: c.ErrOrStderr(),
			})
			return childExit(c, res, err)
		},
	}
	fs := c.Flags()
	reg.add(fs, registryDefault, "the registry's URL")
	tokenFlag(fs, reg)
	fs.StringVar(&op, "op", "", "operation ID the grant binds (default: lock-<random>)")
	fs.StringVar(&class, "class", "lock", "operation class (a gate may allow only some)")
	durationVar(fs, &ttl, "ttl", 15*time.Second, "lease TTL, whole milliseconds (at least 2s, the shortest a lease can renew in time; the registry's limits apply: 2s to 10m unless serve sets others)", ttlRange)
	durationVar(fs, &wait, "wait", 0, "queue at most this long for the resource", durationRange{zero: "as long as it takes"})
	fs.BoolVar(&noWait, "no-wait", false, "fail at once if the resource is held")
	fs.IntVarP(&permits, "permits", "n", 0, fmt.Sprintf("hold one of N permits of RESOURCE as a counting semaphore, N in [%d, %d] (default: an exclusive lock)", wire.PermitsMin, wire.PermitsMax))
	fs.BoolVar(&read, "read", false, "hold a reader's lease of RESOURCE as a read/write lock (default: the exclusive lease, a writer's)")
	durationVar(fs, &grace, "grace", lockexec.GraceDefault, "time between SIGTERM and SIGKILL when ownership is lost or the wrapper is told to stop", graceRange)
	return c
}

// checkPermits refuses, as a usage error naming the range, a permit
// count outside it (-n 0 included), and a semaphore whose slot names
// would not be valid resources. Without -n (set false) the lock is
// exclusive.
func checkPermits(resource string, permits int, set bool) error {
	if !set {
		return nil
	}
	if permits < wire.PermitsMin || permits > wire.PermitsMax {
		return usagef("-n %d: permits must be in [%d, %d]", permits, wire.PermitsMin, wire.PermitsMax)
	}
	if err := wire.ValidateSemaphore(resource, uint64(permits)); err != nil {
		return usagef("-n %d %s: %v", permits, resource, err)
	}
	return nil
}

// checkLockSet refuses, as a usage error, a lock set the registry would
// refuse (a member named twice, too many, a semaphore's slot), and -n
// with a set.
func checkLockSet(members []string, permits bool) error {
	if permits {
		return usagef("-n (a semaphore) takes one RESOURCE, not a lock set of %d", len(members))
	}
	if err := wire.ValidateLockSet(slices.Sorted(slices.Values(members))); err != nil {
		return usagef("lock set %s: %v", strings.Join(members, " "), err)
	}
	return nil
}

// checkRead refuses, as a usage error, --read with -n and a lock whose
// reader resource would not be valid.
func checkRead(resource string, read, permits bool) error {
	if !read {
		return nil
	}
	if permits {
		return usagef("--read with -n: a semaphore has no readers")
	}
	if err := wire.ValidateMode(wire.AcquireRequest{Resource: resource, Mode: wire.ModeRead}); err != nil {
		return usagef("--read %s: %v", resource, err)
	}
	return nil
}

// modeOf is the acquire's mode: wire.ModeRead with --read.
func modeOf(read bool) string {
	if read {
		return wire.ModeRead
	}
	return ""
}

// readyRegistry is the registry client of the flags, once the registry
// answers: a dead registry fails here with its cause; past this point the
// client retries lost answers for as long as the command waits.
func readyRegistry(c *cobra.Command, reg *endpointFlags) (*httpclient.Client, error) {
	rc, err := reg.registryClient()
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(c.Context(), lockReadyTimeout)
	defer cancel()
	if err := rc.Ready(pctx); err != nil {
		return nil, fmt.Errorf("%w (check --registry or FENCEGATE_REGISTRY)", err)
	}
	return rc, nil
}

// childExit turns a wrapped child's end into the command's: the child's
// status (1 when ownership was lost and it exited 0), the wrapper's error
// when nothing ran.
func childExit(c *cobra.Command, res lockexec.Result, err error) error {
	if err != nil {
		err = refusalErr(err)
	}
	if err != nil && res.ExitCode == 0 {
		return err
	}
	if err != nil {
		fmt.Fprintf(c.ErrOrStderr(), "%s: %s\n", c.CommandPath(), userMessage(err))
	}
	code := res.ExitCode
	if res.Lost && code == 0 {
		code = 1
	}
	if code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// envBin names, in the child's environment, the fencegate binary that
// runs it, so a child calls `"$FENCEGATE_BIN" envelope` without fencegate
// on PATH (a binary built in place, or go run). One already set is kept.
const envBin = "FENCEGATE_BIN"

// childExtraEnv is what lock and elect add to the child's environment.
func childExtraEnv() []string {
	if os.Getenv(envBin) != "" {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{envBin + "=" + exe}
}

// lockGuardianUse is the hidden command lock and elect run as their
// guardian (lockexec.Guard).
const lockGuardianUse = "lock-guard"

// guardianArgv is this binary's guardian command, or nil (no guardian:
// the child still dies with the wrapper, its children do not) when the
// binary cannot name itself.
func guardianArgv(c *cobra.Command) []string {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(c.ErrOrStderr(), "%s: warning: no guardian (%v): if this process is killed, what the child started runs on\n", c.CommandPath(), err)
		return nil
	}
	return []string{exe, lockGuardianUse}
}

// newLockGuardianCmd is the guardian: not for people (hidden).
func newLockGuardianCmd() *cobra.Command {
	return &cobra.Command{
		Use:    lockGuardianUse,
		Short:  "the guardian fencegate lock and elect start beside their child (internal)",
		Hidden: true,
		RunE: func(c *cobra.Command, _ []string) error {
			if code := lockexec.Guard(c.InOrStdin(), c.ErrOrStderr()); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
