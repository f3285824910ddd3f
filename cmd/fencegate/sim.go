package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/sim"
	"github.com/fencegate/fencegate/sim/simcli"
)

func init() { register(newSimCmd) }

const simLong = `Run the deterministic simulator: the real registry, client state machine
and gate decision under a fault matrix, with a checker that counts every
violation. One seed reproduces the whole run.

The full gate of the specification (15-30 s on two cores; about three
times longer with --alg ed25519, which gives the same decisions):
  fencegate sim --rounds 100000 --faults all
A gate clock lagging beyond the skew bound, detected and reported:
  fencegate sim --rounds 20000 --skew-beyond-bound

The negative controls (a run with one protection off, which must report
violations) are not in this binary; from a checkout of the source:
  go run ./sim/cmd/simbreak --rounds 5000 --unsafe
  go run ./sim/cmd/simbreak --rounds 5000 --break old-rule

faults: %s

Exit status 1 when any violation is found; each one prints the seed and
the command that replays its round.`

func newSimCmd() *cobra.Command {
	o := &simcli.Options{}
	var broken string
	var unsafe bool
	c := &cobra.Command{
		Use:   "sim",
		Short: "deterministic fault-injection simulation of registry, clients and gate, with a checker",
		Long:  fmt.Sprintf(simLong, strings.Join(sim.FaultNames(), ", ")),
		RunE: func(c *cobra.Command, _ []string) error {
			if unsafe || broken != "" {
				return usagef("the negative controls (--unsafe, --break) are not in this binary: run go run ./sim/cmd/simbreak from a checkout of the source")
			}
			err := simcli.Run(o, nil, c.OutOrStdout())
			if ue := (*simcli.UsageError)(nil); errors.As(err, &ue) {
				return usagef("%v", ue.Err)
			}
			return err
		},
	}
	fs := c.Flags()
	o.Bind(fs)
	// Earlier releases ran the negative controls here; the flags stay,
	// hidden, to say where they went.
	fs.BoolVar(&unsafe, "unsafe", false, "moved to sim/cmd/simbreak")
	fs.StringVar(&broken, "break", "", "moved to sim/cmd/simbreak")
	_ = fs.MarkHidden("unsafe")
	_ = fs.MarkHidden("break")
	return c
}
