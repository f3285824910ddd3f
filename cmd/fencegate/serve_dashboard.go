package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"

	"github.com/spf13/pflag"

	"github.com/fencegate/fencegate/dashboard"
	"github.com/fencegate/fencegate/demo/ledger"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
)

// dashboardOptions are serve's flags for the page at /ui/.
type dashboardOptions struct {
	on            bool
	viewers       []string
	gateReporters []string
	// stuckWaitMs, stuckHoldMs and stuckExempt say when a lock is stuck
	// (dashboard.Config; the defaults' reasons are in dashboard/stuck.go).
	stuckWaitMs, stuckHoldMs uint64
	stuckExempt              []string
}

func (d *dashboardOptions) flags(fs *pflag.FlagSet) {
	fs.BoolVar(&d.on, "dashboard", true, "serve the live dashboard at /ui/ (needs an --admin or --viewer identity to be seen)")
	fs.StringSliceVar(&d.viewers, "viewer", nil, "identity allowed to view the dashboard read-only (repeatable; admins may view and act)")
	fs.StringSliceVar(&d.gateReporters, "gate-reporter", nil, "identity of a gate allowed to push its state to the dashboard (repeatable)")
	fs.Uint64Var(&d.stuckWaitMs, "dashboard-stuck-wait-ms", dashboard.StuckWaitMsDefault,
		"the dashboard lists as stuck a waiter queued longer than this (2 min: eight default leases, more than a crashed holder's TTL and lock-delay explain)")
	fs.Uint64Var(&d.stuckHoldMs, "dashboard-stuck-hold-ms", dashboard.StuckHoldMsDefault,
		"the dashboard lists as stuck a lease held, renewals and all, longer than this (1 h: work under a lock takes minutes; raise it for longer jobs)")
	fs.StringSliceVar(&d.stuckExempt, "dashboard-stuck-exempt-class", slices.Clone(dashboard.StuckExemptClassesDefault),
		`operation classes never listed as stuck, held or waiting (repeatable; "lead": elections, whose leader holds as long as it lives); "" exempts none`)
}

func (d *dashboardOptions) check() error {
	for flag, ids := range map[string][]string{"--viewer": d.viewers, "--gate-reporter": d.gateReporters} {
		if err := httpapi.ValidateAdmins(ids); err != nil {
			return usagef("%s: %v", flag, err)
		}
	}
	switch {
	case d.stuckWaitMs == 0:
		return usagef("--dashboard-stuck-wait-ms must be at least 1 (default %d)", dashboard.StuckWaitMsDefault)
	case d.stuckHoldMs == 0:
		return usagef("--dashboard-stuck-hold-ms must be at least 1 (default %d)", dashboard.StuckHoldMsDefault)
	}
	d.stuckExempt = slices.DeleteFunc(d.stuckExempt, func(c string) bool { return c == "" })
	return nil
}

// reportFlags are the example ledger's flags for reporting its gate to a
// registry's dashboard (fencegate demo ledger).
func reportFlags(fs *pflag.FlagSet, o *ledger.ReportOptions) {
	fs.StringVar(&o.URL, "report-to", "", "a registry whose dashboard gets this gate's state (gate/report)")
	fs.StringVar(&o.Token, "report-token", "", "the ledger's bearer token at --report-to (a serve --gate-reporter identity)")
	fs.StringVar(&o.Identity, "report-identity", "", "the ledger's identity at --report-to; with it, resumes confirmed on the dashboard are applied")
	fs.Uint64Var(&o.IntervalMs, "report-interval-ms", 0, "time between reports (0: 2000; at least 500)")
}

// newDashboard builds the dashboard when it is on and someone may see it;
// otherwise it says why there is none and returns nil.
func (o *serveOptions) newDashboard(reg *registry.Registry, store registry.Store, engine string, ld *loaded, ks *httpapi.KeySetup,
	metrics *httpapi.Metrics, logger *slog.Logger, stderr io.Writer) (*dashboard.Dashboard, error) {
	if !o.dash.on {
		return nil, nil
	}
	if len(o.admins)+len(o.dash.viewers) == 0 {
		fmt.Fprintln(stderr, "fencegate serve: no dashboard: name an --admin or --viewer identity to serve it at /ui/")
		return nil, nil
	}
	return dashboard.New(dashboard.Config{Registry: reg, Store: store, StoreEngine: engine, Auth: ld.auth, Authorizer: ld.authz, Admins: o.admins, Viewers: o.dash.viewers,
		GateReporters: o.dash.gateReporters, Signer: ks.Key, Metrics: metrics.Registry(), Logger: logger, RequestLog: o.requestLog,
		Bundle:      func() (*grant.Bundle, error) { return grant.LoadBundle(ks.BundlePath) },
		StuckWaitMs: o.dash.stuckWaitMs, StuckHoldMs: o.dash.stuckHoldMs, StuckExemptClasses: append([]string{}, o.dash.stuckExempt...)}) // never nil: none given means none exempt
}

// withDashboard mounts d in front of the API and runs its background work
// until ctx ends; without d it returns the API alone.
func withDashboard(ctx context.Context, d *dashboard.Dashboard, api http.Handler) http.Handler {
	if d == nil {
		return api
	}
	go d.Run(ctx)
	return d.Handler(api)
}
