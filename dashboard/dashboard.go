package dashboard

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
)

// PathPrefix is where the page lives.
const PathPrefix = "/ui/"

// Config wires a Dashboard.
type Config struct {
	// Registry answers the linearizable reads behind an action and
	// performs floor raises and epoch revocations. Required.
	Registry *registry.Registry
	// Store is read for resource records, the settings and, to discover
	// resources other replicas granted, the request index. Required.
	Store registry.Store
	// StoreEngine names the store for people ("embedded etcd", "etcd
	// cluster", "ZooKeeper"), shown beside the epochs. Optional.
	StoreEngine string
	// Auth authenticates callers as the API does. Required.
	Auth httpapi.Authenticator
	// Authorizer is the API's resource policy: a viewer sees only the
	// resources it may see (verb see), and a gate's report keeps only
	// what the gate may see. Admins see everything. Required (AllowAll
	// lets every viewer see every resource).
	Authorizer httpapi.Authorizer
	// Admins may view and act; Viewers may view. At least one of the two
	// must name someone, or nobody could use the page.
	Admins, Viewers []string
	// GateReporters are the identities allowed to push gate reports.
	// Optional: without any, reports are refused (403).
	GateReporters []string
	// Signer signs the commands that resume a gate's resource (the
	// registry's own key). Optional: without it the page cannot resume.
	Signer *grant.SigningKey
	// Metrics is gathered for the charts (serve passes the API's private
	// Prometheus registry). Optional: without it there are no charts.
	Metrics prometheus.Gatherer
	// Bundle returns the trust bundle in force, shown with its version
	// and keys. Optional.
	Bundle func() (*grant.Bundle, error)
	// Clock is the registry's clock (lease time left, command expiry).
	// Optional, defaults to the system clock.
	Clock clock.Clock
	// Logger receives the audit lines of actions and, with RequestLog, the
	// request lines of gate reports. Optional, defaults to slog.Default().
	Logger *slog.Logger
	// RequestLog logs every gate report as the API logs its calls
	// (httpapi.LogRequest), with the gate's identity. Optional, defaults
	// to off.
	RequestLog bool
	// StuckWaitMs: a waiter queued longer than this is stuck (stuck.go).
	// Optional, defaults to StuckWaitMsDefault (2 min).
	StuckWaitMs uint64
	// StuckHoldMs: a lease held, renewals and all, longer than this is
	// stuck. Optional, defaults to StuckHoldMsDefault (1 h).
	StuckHoldMs uint64
	// StuckExemptClasses are operation classes never judged stuck, held
	// or waiting. Optional: nil takes StuckExemptClassesDefault
	// (elections, "lead"); an empty, non-nil list exempts none.
	StuckExemptClasses []string
}

// Dashboard serves the page and takes gate reports. Create it with New,
// run Run in the background, and mount Handler.
type Dashboard struct {
	cfg      Config
	tokenKey []byte // confirmation tokens' HMAC key, random per process
	sessions *sessionStore
	used     *usedTokens // confirmation tokens already acted on
	refused  *refusedSet // gate reports' refusals already audited
	gates    *gateStore
	actions  *actionLog
	known    *knownSet
	rules    stuckRules
	stuck    *stuckSet
	samples  *sampler
	streams  chan struct{} // one slot per open event stream

	mu       sync.Mutex // guards viewedAt
	viewedAt time.Time
	build    sync.Mutex // one rebuild at a time; guards cached
	cached   *data
}

// New checks cfg and returns a Dashboard.
func New(cfg Config) (*Dashboard, error) {
	if cfg.Registry == nil || cfg.Store == nil || cfg.Auth == nil || cfg.Authorizer == nil {
		return nil, errors.New("dashboard: Config.Registry, Store, Auth and Authorizer are required")
	}
	if len(cfg.Admins)+len(cfg.Viewers) == 0 {
		return nil, errors.New("dashboard: name at least one admin or viewer identity, or nobody can see it")
	}
	pages() // parsed now: a bad template stops serve at start, not at a first page
	for _, ids := range [][]string{cfg.Admins, cfg.Viewers, cfg.GateReporters} {
		if err := httpapi.ValidateAdmins(ids); err != nil {
			return nil, fmt.Errorf("dashboard: %w", err)
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return &Dashboard{cfg: cfg, tokenKey: key, sessions: newSessionStore(), used: newUsedTokens(), refused: newRefusedSet(), gates: newGateStore(), actions: &actionLog{}, known: newKnownSet(),
		rules: newStuckRules(cfg), stuck: newStuckSet(), samples: newSampler(cfg.Metrics), streams: make(chan struct{}, StreamsMax)}, nil
}

// NoteResource tells the dashboard of a resource an API call named
// (httpapi.Config.Seen). Invalid names are ignored.
func (d *Dashboard) NoteResource(resource string) {
	if grant.ValidateResource(resource) == nil {
		d.known.note(resource, d.cfg.Clock.Now().UnixMilli())
	}
}

// Run samples the metrics for the rate chart and, while someone looks at
// the page, discovers resources from the request index and scans the
// registry's locks for stuck ones, until ctx ends.
func (d *Dashboard) Run(ctx context.Context) error {
	sample := time.NewTicker(SampleIntervalMs * time.Millisecond)
	defer sample.Stop()
	discover := time.NewTicker(DiscoveryIntervalMs * time.Millisecond)
	defer discover.Stop()
	d.discover(ctx)
	d.scanLocks(ctx)
	for {
		d.samples.take(d.cfg.Clock.Now())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-sample.C:
		case <-discover.C:
			if d.watched() {
				d.discover(ctx)
				d.scanLocks(ctx)
			}
		}
	}
}

// watched reports whether the page was rendered in the last minute.
func (d *Dashboard) watched() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg.Clock.Now().Sub(d.viewedAt) < time.Minute
}

// Handler serves the page under PathPrefix and gate reports at
// report.ReportPath; everything else goes to next (the API; nil: 404).
func (d *Dashboard) Handler(next http.Handler) http.Handler {
	if next == nil {
		next = http.NotFoundHandler()
	}
	mux := http.NewServeMux()
	mux.Handle(PathPrefix, d.ui())
	mux.Handle("GET /ui", http.RedirectHandler(PathPrefix, http.StatusMovedPermanently))
	for _, r := range d.apiRoutes() {
		mux.Handle(r.Path, r.h)
	}
	mux.Handle("/", next)
	return mux
}

// apiRoute is an API endpoint the dashboard serves beside the API.
type apiRoute struct {
	httpapi.Route
	h http.Handler
}

// apiRoutes are the API endpoints Handler serves (the page under
// PathPrefix is not part of the API); APIRoutes lists the same.
func (d *Dashboard) apiRoutes() []apiRoute {
	return []apiRoute{{httpapi.Route{Method: http.MethodPost, Path: report.ReportPath}, http.HandlerFunc(d.ingest)}}
}

// APIRoutes lists the API endpoints Handler serves besides next's:
// api/openapi.yaml describes them with httpapi.Server.Routes.
func (d *Dashboard) APIRoutes() []httpapi.Route {
	var out []httpapi.Route
	for _, r := range d.apiRoutes() {
		out = append(out, r.Route)
	}
	return out
}

func (d *Dashboard) ui() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui/{$}", d.viewing(d.page))
	mux.HandleFunc("GET /ui/live", d.viewing(d.live))
	mux.HandleFunc("GET /ui/events", d.viewing(d.events))
	mux.HandleFunc("GET /ui/action", d.viewing(d.actionForm))
	mux.HandleFunc("POST /ui/confirm", d.viewing(d.confirm))
	mux.HandleFunc("POST /ui/act", d.viewing(d.act))
	mux.HandleFunc("GET /ui/login", d.loginPage)
	mux.HandleFunc("POST /ui/login", d.login)
	mux.HandleFunc("POST /ui/logout", d.logout)
	mux.Handle("GET /ui/assets/", http.StripPrefix(PathPrefix, assetServer()))
	mux.HandleFunc(PathPrefix, func(w http.ResponseWriter, r *http.Request) {
		d.fail(w, r, http.StatusNotFound, "no such page: "+r.Method+" "+r.URL.Path)
	})
	return secured(mux)
}

// isAdmin and isViewer test membership.
func (d *Dashboard) isAdmin(id string) bool { return slices.Contains(d.cfg.Admins, id) }
func (d *Dashboard) isViewer(id string) bool {
	return d.isAdmin(id) || slices.Contains(d.cfg.Viewers, id)
}
