//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/lockexec"
	"github.com/fencegate/fencegate/wire"
)

func init() { register(newElectCmd) }

const electLong = `Campaign to lead the election NAME and run COMMAND while leading, as
etcdctl elect does; or, with --observe, print who leads NAME and each
change of leader, until interrupted (or refused: an identity the resource
policy does not let see NAME, or a bad token, ends it with exit 1).

Candidates queue at the registry in the order they came (each keeps its
place however long it waits); the first leads until its COMMAND exits,
its lease is lost, or it is interrupted, and the next takes over at
once. The leader's term is its grant's fence (FENCEGATE_FENCE in
COMMAND's environment): terms only rise. That is what makes a deposed
leader harmless: a leader that paused past its lease (a GC pause, a
frozen VM, a partition) still believes it leads when it wakes, and its
writes reach the resource after its successor's; a gate refuses them,
because their term is lower. Take each write's envelope from the helper
(fencegate envelope, as under fencegate lock) and the gate does the rest.

COMMAND runs as under fencegate lock: the same environment, the same
envelope socket, stopped (SIGTERM, then SIGKILL after --grace) the moment
leadership is no longer certain, its process group ended before the
release and killed by a guardian if elect itself is killed; the same exit
status (docs/operations.md, "What happens when").

NAME is a resource ID (election/web-primary, say): the resource policy's
rules and fencegate status apply to it.`

func newElectCmd() *cobra.Command {
	reg := &endpointFlags{name: "registry"}
	var op string
	var ttl, grace time.Duration
	var observe bool
	var out outputFlag
	c := &cobra.Command{
		Use:   "elect NAME [flags] -- COMMAND [ARG...]\n  fencegate elect --observe NAME",
		Short: "lead election NAME and run a command while leading; or watch who leads",
		Long:  electLong + "\n\n" + exitStatusHelp(),
		Example: `  fencegate elect election/scheduler --ttl 10s -- ./scheduler
  fencegate elect --observe election/scheduler`,
		Args: func(c *cobra.Command, args []string) error {
			if observe {
				if len(args) != 1 || c.ArgsLenAtDash() >= 0 {
					return usagef("--observe takes NAME and no command")
				}
				return checkResourceArg(args[0])
			}
			if c.ArgsLenAtDash() != 1 || len(args) < 2 {
				return usagef("want NAME -- COMMAND [ARG...] (the command after --), or --observe NAME")
			}
			return checkResourceArg(args[0])
		},
		RunE: func(c *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			rc, err := readyRegistry(c, reg)
			if err != nil {
				return err
			}
			s := client.NewSession(rc, client.Options{})
			if observe {
				return observeElection(c, s, args[0], out)
			}
			res, err := lockexec.Run(c.Context(), lockexec.Config{
				Session: s, Name: "fencegate elect",
				Request: wire.AcquireRequest{Resource: args[0], OperationID: op, OperationClass: client.CampaignClassDefault, TTLMs: uint64(ttl.Milliseconds())},
				Command: args[1], Args: args[2:], Env: childExtraEnv(), Grace: grace, Guardian: guardianArgv(c),
				Stdin: c.InOrStdin(), Stdout: c.OutOrStdout(), Stderr: c.ErrOrStderr(), Log: c.ErrOrStderr(),
			})
			return childExit(c, res, err)
		},
	}
	fs := c.Flags()
	reg.add(fs, registryDefault, "the registry's URL")
	tokenFlag(fs, reg)
	fs.StringVar(&op, "op", "lead", "operation ID the leader's grant binds")
	durationVar(fs, &ttl, "ttl", 15*time.Second, "the leader's lease, whole milliseconds: how long a leader that stops renewing keeps the others waiting (at least 2s, the shortest a lease can renew in time; the registry's limits apply: 2s to 10m unless serve sets others)", ttlRange)
	durationVar(fs, &grace, "grace", lockexec.GraceDefault, "time between SIGTERM and SIGKILL when leadership is lost or the wrapper is told to stop", graceRange)
	fs.BoolVar(&observe, "observe", false, "print who leads NAME, then each change, until interrupted")
	out.add(fs)
	return c
}

// observeElection prints the leader and each change until ctx ends, or
// until the registry refuses the identity (exit 1, the refusal printed).
func observeElection(c *cobra.Command, s *client.Session, name string, out outputFlag) error {
	e, err := client.NewElection(s, name)
	if err != nil {
		return usagef("%v", err)
	}
	leaders, err := e.Observe(c.Context())
	if err != nil {
		return refusalErr(err)
	}
	for l := range leaders {
		if l.Err != nil {
			return refusalErr(l.Err)
		}
		printLeader(c.OutOrStdout(), name, l, out)
	}
	return nil
}

// printLeader is one line a leader (or a JSON object a line).
func printLeader(w io.Writer, name string, l client.Leader, out outputFlag) {
	if out.v == "json" {
		_ = json.NewEncoder(w).Encode(l)
		return
	}
	if l.Identity == "" {
		fmt.Fprintf(w, "%s  %s: no leader\n", l.ReadAt.UTC().Format(time.RFC3339), name)
		return
	}
	fmt.Fprintf(w, "%s  %s: leader %s, term %d (lease %s, since %s)\n", l.ReadAt.UTC().Format(time.RFC3339), name,
		l.Identity, l.Term, l.Lease, stamp(l.Since))
}
