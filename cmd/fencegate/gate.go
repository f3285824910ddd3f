package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/gate/gateadmin"
	"github.com/fencegate/fencegate/gate/pggate"
)

func init() { register(newGateCmd) }

// gateFlags reach a gate: its database (--db) or the admin endpoint of
// the service that embeds it (--gate).
type gateFlags struct {
	db, prefix, operator string
	ep                   endpointFlags
}

func newGateCmd() *cobra.Command {
	c := parentCommand("gate", "show a resource's state at a gate, resume it after FENCE_REGRESSION",
		`Administer a gate without writing Go, in one of two ways:

  --db DSN     the gate's database itself: a SQLite file or a postgres://
               URL holding a gate/sqlgate gate, or the gate inside
               PostgreSQL (fencegate gate install: the schema fencegate,
               found on its own). Access to the database is the
               authentication; name yourself with --operator (--token is
               not used).
  --gate URL   the admin endpoint of the service embedding the gate
               (gateadmin.Handler, mounted at /v1/gate/). Authenticate as
               an admin identity of that service (--token or a client
               certificate); the service records that identity.

Every resume is recorded in the gate's operator_actions with the operator
and --note, in the transaction that resumes.`)
	g := &gateFlags{ep: endpointFlags{name: "gate"}}
	fs := c.PersistentFlags()
	fs.StringVar(&g.db, "db", "", "the gate's database: a SQLite file or a postgres://… URL")
	fs.StringVar(&g.prefix, "table-prefix", "", "the gate's table prefix (default fencegate_)")
	fs.StringVar(&g.operator, "operator", "", "with --db: who you are, recorded with the action")
	bindEnv(fs, "db", "table-prefix", "operator")
	g.ep.add(fs, "", "the URL of the service embedding the gate, e.g. https://ledger:8443")
	tokenFlag(fs, &g.ep)
	c.AddCommand(newGateStatusCmd(g), newGateResumeCmd(g))
	for _, sub := range gateSubcommands {
		c.AddCommand(sub(g))
	}
	return c
}

// gateSubcommands are the gate subcommands defined in files of their own
// (gate_install.go, gate_enroll.go).
var gateSubcommands []func(*gateFlags) *cobra.Command

func newGateStatusCmd(g *gateFlags) *cobra.Command {
	var asJSON bool
	status := &cobra.Command{
		Use:     "status RESOURCE (--db DSN | --gate URL)",
		Short:   "the resource's fence state, pause, alarms and operator actions at the gate",
		Example: "  fencegate gate status invoice-batch/2026-07-19 --db /var/lib/ledger/ledger.db\n  fencegate gate status invoice-batch/2026-07-19 --gate https://ledger:8443",
		Args:    exactArgs("RESOURCE"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkResourceArg(args[0]); err != nil {
				return err
			}
			return g.with(c.Context(), false, func(ctx context.Context, a gateadmin.Admin) error {
				st, err := a.Status(ctx, args[0])
				if err != nil {
					return err
				}
				return printGateStatus(c.OutOrStdout(), st, asJSON)
			})
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return status
}

func newGateResumeCmd(g *gateFlags) *cobra.Command {
	var floor uint64
	var note string
	resume := &cobra.Command{
		Use:   "resume RESOURCE --floor N --note TEXT (--db DSN --operator NAME | --gate URL)",
		Short: "lift a FENCE_REGRESSION pause once the registry's floor is above highestFence",
		Long: `Lift a FENCE_REGRESSION pause. --floor is the registry's fence floor for the
resource, as fencegate floor raise printed it; the gate refuses unless it
is above the resource's highestFence (raise the floor first). Later
grants at or below the floor are stale; one issued after this resume is
new evidence of a regression and pauses the resource again.`,
		Example: `  fencegate floor raise invoice-batch/2026-07-19 --above 43 --note "INC-7"
  fencegate gate resume invoice-batch/2026-07-19 --floor 43 --note "INC-7: floor raised" --db ledger.db --operator alice`,
		Args: exactArgs("RESOURCE"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkResourceArg(args[0]); err != nil {
				return err
			}
			if floor == 0 || note == "" {
				return usagef("--floor N and --note TEXT are required: the registry's floor for the resource (fencegate floor raise), and why")
			}
			return g.with(c.Context(), true, func(ctx context.Context, a gateadmin.Admin) error {
				st, err := a.Resume(ctx, gateadmin.ResumeRequest{Resource: args[0], Floor: floor, Note: note})
				if err != nil {
					return fmt.Errorf("%w (check that fencegate floor raise %s --above %d was done; --floor must exceed highestFence)", err, args[0], floor)
				}
				fmt.Fprintf(c.OutOrStdout(), "resumed %s: floor %d > highestFence %d\n", args[0], floor, st.HighestFence)
				return printGateStatus(c.OutOrStdout(), st, false)
			})
		},
	}
	resume.Flags().Uint64Var(&floor, "floor", 0, "the registry's fence floor for the resource; must be above highestFence")
	resume.Flags().StringVar(&note, "note", "", "why the resource may resume; recorded with the operator")
	return resume
}

// with runs fn on the Admin the flags name, checking them first.
func (g *gateFlags) with(ctx context.Context, writes bool, fn func(context.Context, gateadmin.Admin) error) error {
	switch {
	case (g.db == "") == (g.ep.url == ""):
		return usagef("give exactly one of --db DSN (the gate's database) or --gate URL (the service's admin endpoint)")
	case g.db != "" && writes && g.operator == "":
		return usagef("--operator is required with --db: who you are, recorded with the action (or FENCEGATE_OPERATOR)")
	}
	ctx, cancel := callContext(ctx)
	defer cancel()
	if g.ep.url != "" {
		hc, err := g.ep.httpClient()
		if err != nil {
			return err
		}
		return fn(ctx, &gateadmin.Client{Base: g.ep.url, Token: g.ep.bearer(), HTTP: hc})
	}
	if gateadmin.IsPostgres(g.db) {
		db, inside, err := openGateInsidePG(ctx, g)
		if err != nil {
			return err
		}
		if inside {
			defer db.Close()
			return fn(ctx, &gateadmin.Store{Gate: pggate.Operated{DB: db}, Operator: g.operator})
		}
	}
	l, err := gateadmin.OpenLocal(ctx, g.db, g.prefix, g.operator)
	if err != nil {
		return err
	}
	defer l.DB.Close()
	return fn(ctx, l)
}

func printGateStatus(w io.Writer, st gateadmin.Status, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	paused := "no"
	if st.Paused {
		paused = "YES: " + st.PausedReason
	}
	fmt.Fprintf(w, "resource:            %s\nmode:                %s\nhighestFence:        %d\nlastSegmentSeq:      %d\nminPolicyGeneration: %d\npaused:              %s\n",
		st.Resource, st.Mode, st.HighestFence, st.LastSegmentSeq, st.MinPolicyGeneration, paused)
	if st.Floor > 0 {
		fmt.Fprintf(w, "resumed with floor:  %d at %s\n", st.Floor, st.FloorAt)
	}
	printCoverage(w, st.Coverage)
	for _, a := range st.Alarms {
		fmt.Fprintf(w, "alarm   %s  %s fence %d: %s\n", msTime(a.AtMs), a.Kind, a.Fence, a.Detail)
	}
	for _, a := range st.Actions {
		fmt.Fprintf(w, "action  %s  %s by %s: %s\n", msTime(a.AtMs), a.Action, a.Operator, strings.TrimSpace(a.Detail))
	}
	if st.Paused {
		fmt.Fprintf(w, "\nnext: fencegate floor raise %s --above %d --note …, then fencegate gate resume %s --floor %d --note …\n",
			st.Resource, st.HighestFence+1, st.Resource, st.HighestFence+1)
	}
	return nil
}

// printCoverage prints the gate's coverage count: this resource's gated
// rows, the gate's share of protected writes fenced, and each protected
// table (its mode, what names a row's resource, its ungated rows).
func printCoverage(w io.Writer, c *gateadmin.Coverage) {
	if c == nil {
		return
	}
	fmt.Fprintf(w, "gated writes:        %d (rows of protected tables written under an accept of this resource)\n", c.ResourceGated)
	fmt.Fprintf(w, "coverage:            %.2f%% of protected writes fenced at this gate (gated %d, ungated %d)\n", 100*c.Ratio(), c.Gated, c.Ungated)
	for _, t := range c.Tables {
		res := t.Resource
		if res == "" {
			res = "unknown: no row is gated until the table is protected again naming it"
		}
		fmt.Fprintf(w, "protected table      %s (%s, resource %s): %d ungated\n", t.Table, t.Mode, res, t.Ungated)
	}
}

func msTime(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }
