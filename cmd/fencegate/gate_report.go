package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/grant"
)

func init() { gateSubcommands = append(gateSubcommands, newGateReportCmd) }

type gateReportOptions struct {
	url, token, identity, trustBundle, service string
	intervalMs                                 uint64
}

func newGateReportCmd(g *gateFlags) *cobra.Command {
	o := &gateReportOptions{}
	c := &cobra.Command{
		Use:   "report --db postgres://… --report-to URL --report-token TOKEN [--report-identity ID --trust-bundle FILE]",
		Short: "show the gate inside PostgreSQL on a registry's dashboard",
		Long: `Report the gate inside PostgreSQL (fencegate gate install) to a registry's
dashboard until stopped: every --report-interval-ms, its resources (paused
first), their alarms, quarantines and last operator actions, read from
the database in one read-only transaction, as a service's reporter does
for a gate in Go (gate/report). The registry must name the token's
identity with serve --gate-reporter. Run one beside the database, as a
role that can read the gate's tables (its owner).

With --report-identity and --trust-bundle (the registry's, to check the
commands it signs), a resume an admin confirms on the dashboard is
applied here, recorded with that admin as the operator; without them
every command is answered "disabled".

The writes themselves happen inside PostgreSQL, by any client: the
dashboard shows the gate's state and records, not its last decisions or
decision counts.`,
		Example: `  fencegate serve … --gate-reporter ledger-db
  fencegate gate report --db postgres://fencegate_owner@db/ledger --report-to https://registry:7420 \
    --report-token "$TOKEN" --report-identity ledger-db --trust-bundle trust-bundle.json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if o.url == "" {
				return usagef("--report-to URL is required: the registry whose dashboard shows the gate")
			}
			if (o.identity == "") != (o.trustBundle == "") {
				return usagef("--report-identity and --trust-bundle go together: resumes from the dashboard are verified against the registry's bundle")
			}
			db, err := openPG(g) // not withPG: the reporter runs until stopped, not one call
			if err != nil {
				return err
			}
			defer db.Close()
			r, err := o.reporter(db, c)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "reporting the gate inside PostgreSQL to %s\n", o.url)
			if err := r.Run(c.Context()); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.url, "report-to", "", "the registry whose dashboard shows the gate, e.g. https://registry:7420")
	fs.StringVar(&o.token, "report-token", "", "the gate's bearer token there (a serve --gate-reporter identity)")
	fs.StringVar(&o.identity, "report-identity", "", "the gate's identity there; with --trust-bundle, resumes confirmed on the dashboard are applied")
	fs.StringVar(&o.trustBundle, "trust-bundle", "", "the registry's trust bundle, to verify the commands it signs")
	fs.StringVar(&o.service, "service", "gate inside PostgreSQL", "the label the dashboard shows beside the gate's identity")
	fs.Uint64Var(&o.intervalMs, "report-interval-ms", 0, "time between reports (0: 2000; at least 500)")
	bindEnv(fs, "report-to", "report-token", "report-identity")
	return c
}

// reporter builds the reporter of the gate in db.
func (o *gateReportOptions) reporter(db *sql.DB, c *cobra.Command) (*report.Reporter, error) {
	src := pggate.Reporting{DB: db}
	cfg := report.Config{URL: o.url, Token: o.token, Service: o.service, Source: src, IntervalMs: o.intervalMs,
		Logger: slog.New(slog.NewTextHandler(c.ErrOrStderr(), nil))}
	if o.identity != "" {
		b, err := grant.LoadBundle(o.trustBundle)
		if err != nil {
			return nil, fmt.Errorf("gate report: trust bundle: %w", err)
		}
		cfg.Commands = &report.CommandConfig{Identity: o.identity, Verifier: grant.NewVerifier(b, 0), Resumer: src}
	}
	return report.New(cfg)
}
