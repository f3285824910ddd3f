//go:build unix

// This file is the hidden subcommands the demo runs as its children: the
// example ledger service and a worker.

package main

import (
	"os"
	"strings"

	"github.com/fencegate/fencegate/demo/ledger"
	"github.com/spf13/cobra"
)

func newDemoLedgerCmd() *cobra.Command {
	var o ledger.ServeOptions
	c := &cobra.Command{
		Use:   "ledger --db DB --token-file FILE (--trust-bundle FILE | --lease-only)",
		Short: "the example ledger service (a protected service writing through the gate)",
		RunE: func(c *cobra.Command, _ []string) error {
			if o.DB == "" || o.TokenFile == "" || (o.TrustBundle == "" && !o.LeaseOnly) {
				return usagef("--db, --token-file and --trust-bundle (or --lease-only) are required")
			}
			return ledger.Serve(c.Context(), o, c.OutOrStdout())
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:0", "address to serve on")
	fs.StringVar(&o.DB, "db", "", "SQLite file, or a postgres://… URL (required)")
	fs.StringVar(&o.TrustBundle, "trust-bundle", "", "the registry's trust bundle (required unless --lease-only)")
	fs.StringVar(&o.TokenFile, "token-file", "", "bearer tokens → identities, as for serve (required)")
	fs.BoolVar(&o.LeaseOnly, "lease-only", false, "negative control: no gate, every authenticated write lands")
	fs.StringVar(&o.TrustBundleURL, "trust-bundle-url", "", "a registry to poll for newer signed trust bundles (written back to --trust-bundle)")
	durationVar(fs, &o.TrustBundleInterval, "trust-bundle-interval", 0, "how often to poll --trust-bundle-url", durationRange{zero: "30s"})
	fs.StringSliceVar(&o.Admins, "admin", nil, "identity allowed at the gate's admin endpoint /v1/gate/ (fencegate gate --gate URL); repeatable")
	reportFlags(fs, &o.Report) // the dashboard (serve_dashboard.go)
	return c
}

func newDemoWorkerCmd() *cobra.Command {
	var o ledger.WorkerOptions
	var sets []string
	c := &cobra.Command{
		Use:   "worker --registry URL --ledger URL --token TOKEN --resource R --set KEY=VALUE...",
		Short: "one example worker: acquire, write through the ledger's gate, release",
		RunE: func(c *cobra.Command, _ []string) error {
			for _, s := range sets {
				k, v, ok := strings.Cut(s, "=")
				if !ok {
					return usagef("--set %q: want KEY=VALUE", s)
				}
				o.Entries = append(o.Entries, ledger.Entry{Key: k, Value: v})
			}
			if o.Registry == "" || o.Ledger == "" || o.Token == "" || o.Resource == "" || len(o.Entries) == 0 {
				return usagef("--registry, --ledger, --token, --resource and --set are required")
			}
			return ledger.WorkerProcess(c.Context(), o, os.Stdin, c.OutOrStdout())
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.Name, "name", "A", "name shown in events")
	fs.StringVar(&o.Registry, "registry", "", "registry URL (required)")
	fs.StringVar(&o.Ledger, "ledger", "", "ledger URL (required)")
	fs.StringVar(&o.Token, "token", "", "bearer token of this worker's identity, for both (required)")
	fs.StringVar(&o.Resource, "resource", "", "resource to lease (required)")
	fs.StringVar(&o.OperationID, "op", "settle", "operation ID")
	fs.StringArrayVar(&sets, "set", nil, "KEY=VALUE to write (repeatable)")
	fs.IntVar(&o.Segments, "segments", 1, "cut the entries into this many ordered segments")
	fs.Uint64Var(&o.TTLMs, "ttl-ms", demoTTLMsSuccessor, "lease TTL in ms")
	fs.Uint64Var(&o.WaitMs, "wait-ms", 0, "queue behind the current holder at most this long")
	fs.BoolVar(&o.LeaseOnly, "lease-only", false, "negative control: write without an envelope")
	fs.BoolVar(&o.HoldOnStdin, "hold", false, "wait for a line on stdin before sending the first write")
	return c
}
