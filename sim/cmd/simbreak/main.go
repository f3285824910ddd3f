// Command simbreak runs the simulator's negative controls: the same runs
// as `fencegate sim`, with one protection off on purpose (sim/negative),
// so that the checker must report what it lets through. A control works
// when the run reports violations (exit status 1). The fencegate binary
// does not link this command's packages.
//
//	go run ./sim/cmd/simbreak --rounds 5000 --unsafe
//	go run ./sim/cmd/simbreak --rounds 5000 --break old-rule
//	go run ./sim/cmd/simbreak --rounds 2000 --seed 3 --faults restore=1 --break content-compare
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/sim/negative"
	"github.com/fencegate/fencegate/sim/simcli"
)

func main() {
	c := newCmd()
	err := c.Execute()
	var ue *simcli.UsageError
	switch {
	case err == nil:
	case errors.As(err, &ue):
		fmt.Fprintln(os.Stderr, "simbreak:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "simbreak:", err)
		os.Exit(1)
	}
}

func newCmd() *cobra.Command {
	o := &simcli.Options{}
	var broken string
	var unsafe bool
	c := &cobra.Command{
		Use:   "simbreak --break NAME | --unsafe [flags]",
		Short: "the simulator's negative controls: a run with one protection off, which must report violations",
		Long: `Run the simulator as fencegate sim does, with one protection off on
purpose. The checker must then count what that protection stops: a
negative control works when the run reports violations (exit status 1).

protections: ` + strings.Join(negative.Names(), ", ") + `; --unsafe is --break fence`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(c *cobra.Command, _ []string) error {
			if unsafe {
				if broken != "" && broken != "fence" {
					return &simcli.UsageError{Err: fmt.Errorf("--unsafe and --break %s are exclusive", broken)}
				}
				broken = "fence"
			}
			if broken == "" {
				return &simcli.UsageError{Err: errors.New("name a protection to break (--break NAME or --unsafe); the product's own runs are fencegate sim")}
			}
			n, err := negative.ByName(broken)
			if err != nil {
				return &simcli.UsageError{Err: err}
			}
			return simcli.Run(o, n, c.OutOrStdout())
		},
	}
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &simcli.UsageError{Err: err} })
	fs := c.Flags()
	fs.StringVar(&broken, "break", "", "the protection to turn off: "+strings.Join(negative.Names(), ", "))
	fs.BoolVar(&unsafe, "unsafe", false, "lease-only protection, no fence check at the resource (--break fence)")
	o.Bind(fs)
	return c
}
