package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"

	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/gate/report/sqlreport"
	"github.com/fencegate/fencegate/gate/sqlgate"
)

// ReportOptions push the ledger gate's state to a registry's dashboard
// (gate/report): its resources, its last decisions, its open UNKNOWN
// operations. The reporter runs beside the service; a write only notes
// its answer in the decision log after the gate has given it.
type ReportOptions struct {
	URL   string // the registry, e.g. http://127.0.0.1:7420
	Token string // the ledger's bearer token there (a --gate-reporter identity)
	// Identity is the ledger's identity at the registry. With it the
	// ledger applies the resumes an admin confirms on the dashboard
	// (verified against its trust bundle); without it, it takes none.
	Identity   string
	IntervalMs uint64  // 0: report.IntervalMsDefault
	Read       *sql.DB // where reports read (sqlgate.OpenSQLiteReader, or the PostgreSQL pool)
	Logger     *slog.Logger
}

// Reporter returns the ledger's reporter; run it with Run. It needs a
// fenced ledger.
func (s *Server) Reporter(o ReportOptions) (*report.Reporter, error) {
	if s.g == nil {
		return nil, fmt.Errorf("ledger: a lease-only ledger has no gate to report")
	}
	src := &sqlreport.Gate{Gate: s.g, Read: o.Read, Write: s.cfg.DB}
	cfg := report.Config{URL: o.URL, Token: o.Token, Service: "ledger", Source: src, Log: s.log, Unknown: s.unknown,
		Counters: s.g.Counters(), IntervalMs: o.IntervalMs, Logger: o.Logger}
	if o.Identity != "" {
		cfg.Commands = &report.CommandConfig{Identity: o.Identity, Verifier: s.cfg.Verifier, Resumer: src}
	}
	return report.New(cfg)
}

// startReporter runs the reporter of o until ctx ends, reading through a
// second, read-only handle on SQLite so that reports never wait for the
// writers' one connection.
func (s *Server) startReporter(ctx context.Context, o ReportOptions, dsn string, postgres bool) (func(), error) {
	closeRead := func() {}
	if o.Read == nil {
		o.Read = s.cfg.DB
		if !postgres {
			rd, err := sqlgate.OpenSQLiteReader(dsn)
			if err != nil {
				return nil, err
			}
			o.Read, closeRead = rd, func() { rd.Close() }
		}
	}
	r, err := s.Reporter(o)
	if err != nil {
		closeRead()
		return nil, err
	}
	go r.Run(ctx)
	return closeRead, nil
}
