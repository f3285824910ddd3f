package ledger

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver for --db postgres://…

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/gate/bundlefetch"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/httpapi"
)

// ServeOptions run a ledger as a process.
type ServeOptions struct {
	Listen      string   // "127.0.0.1:0" for any free port
	DB          string   // a SQLite file path, or a postgres://… URL
	TrustBundle string   // the registry's trust bundle file (serve writes one into its --data-dir)
	TokenFile   string   // bearer tokens → identities, the registry's format
	LeaseOnly   bool     // the negative control
	Admins      []string // identities allowed at the gate's admin endpoint (/v1/gate/)
	// TrustBundleURL, if set, is a registry whose GET /v1/trust-bundle is
	// polled every TrustBundleInterval (0: bundlefetch.IntervalDefault);
	// accepted bundles replace the verifier's and are written to
	// TrustBundle.
	TrustBundleURL      string
	TrustBundleInterval time.Duration
	// Report, with a URL, pushes the gate's state to that registry's
	// dashboard (ReportOptions).
	Report ReportOptions
}

// OpenDB opens dsn: PostgreSQL for a postgres:// or postgresql:// URL or
// a libpq "host=… dbname=…" string, otherwise a SQLite file. It reports
// which.
func OpenDB(dsn string) (db *sql.DB, postgres bool, err error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") ||
		strings.Contains(dsn, "host=") || strings.Contains(dsn, "dbname=") {
		db, err = sql.Open("pgx", dsn)
		return db, true, err
	}
	db, err = sqlgate.OpenSQLite(dsn, "FULL")
	return db, false, err
}

// Serve runs a ledger until ctx ends. It prints "ledger: listening on
// http://ADDR" to stdout once it accepts connections.
func Serve(ctx context.Context, o ServeOptions, stdout io.Writer) error {
	db, pg, err := OpenDB(o.DB)
	if err != nil {
		return fmt.Errorf("ledger: open %s: %w", o.DB, err)
	}
	defer db.Close()
	auth, err := httpapi.LoadTokenFile(o.TokenFile)
	if err != nil {
		return err
	}
	cfg := Config{DB: db, Postgres: pg, Auth: auth, LeaseOnly: o.LeaseOnly, Admins: o.Admins}
	if !o.LeaseOnly {
		b, err := grant.LoadBundle(o.TrustBundle)
		if err != nil {
			return fmt.Errorf("ledger: trust bundle: %w", err)
		}
		cfg.Verifier = grant.NewVerifier(b, 0)
		if o.TrustBundleURL != "" {
			rc, err := httpclient.NewClient(o.TrustBundleURL)
			if err != nil {
				return err
			}
			f := &bundlefetch.Fetcher{Source: rc.TrustBundle, Verifier: cfg.Verifier, Path: o.TrustBundle, Interval: o.TrustBundleInterval}
			go f.Run(ctx)
		}
	}
	srv, err := NewServer(ctx, cfg)
	if err != nil {
		return err
	}
	if o.Report.URL != "" {
		closeRead, err := srv.startReporter(ctx, o.Report, o.DB, pg)
		if err != nil {
			return err
		}
		defer closeRead()
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return err
	}
	mode := "fenced (gate on " + map[bool]string{false: "SQLite", true: "PostgreSQL"}[pg] + ")"
	if o.LeaseOnly {
		mode = "LEASE-ONLY (negative control: no gate)"
	}
	fmt.Fprintf(stdout, "ledger: listening on http://%s, %s\n", ln.Addr(), mode)
	return httpapi.Serve(ctx, ln, srv, nil)
}

// WorkerOptions run a worker as a process.
type WorkerOptions struct {
	Name, Registry, Ledger, Token string
	Resource, OperationID         string
	Entries                       []Entry
	Segments                      int
	TTLMs, WaitMs                 uint64
	LeaseOnly                     bool
	// HoldOnStdin: after the first write is ready, wait for a line on
	// stdin before sending it (the demo freezes the process meanwhile).
	HoldOnStdin bool
}

// WorkerProcess runs one worker and prints each Event as a JSON line on
// stdout.
func WorkerProcess(ctx context.Context, o WorkerOptions, stdin io.Reader, stdout io.Writer) error {
	rc, err := httpclient.NewClient(o.Registry, httpclient.WithBearerToken(o.Token), httpclient.WithHeaders(injectTrace))
	if err != nil {
		return err
	}
	var mu sync.Mutex
	enc := json.NewEncoder(stdout)
	cfg := WorkerConfig{
		Name: o.Name, Registry: rc, Ledger: &Client{Base: o.Ledger, Token: o.Token},
		Resource: o.Resource, OperationID: o.OperationID, Entries: o.Entries, Segments: o.Segments,
		TTL: msDuration(o.TTLMs), Wait: msDuration(o.WaitMs), LeaseOnly: o.LeaseOnly,
		Emit: func(e Event) { mu.Lock(); defer mu.Unlock(); _ = enc.Encode(e) },
	}
	if o.HoldOnStdin {
		cfg.Hold = func(ctx context.Context) error { return readLine(ctx, stdin) }
	}
	res, err := RunWorker(ctx, cfg)
	if err != nil {
		cfg.Emit(Event{Worker: o.Name, Kind: "failed", Msg: err.Error()})
		return err
	}
	cfg.Emit(Event{Worker: o.Name, Kind: "done", Fence: res.Fence, Outcome: string(res.Outcome),
		Msg: fmt.Sprintf("done: written=%t", res.Written)})
	return nil
}

// readLine waits for one line on r, or for ctx.
func readLine(ctx context.Context, r io.Reader) error {
	done := make(chan error, 1)
	go func() {
		_, err := bufio.NewReader(r).ReadString('\n')
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("ledger: hold: %w", err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func msDuration(ms uint64) time.Duration { return time.Duration(ms) * time.Millisecond }
