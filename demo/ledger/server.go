package ledger

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gateadmin"
	"github.com/fencegate/fencegate/gate/gatemetrics"
	"github.com/fencegate/fencegate/gate/gatetrace"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/httpapi"
)

// RequestBytesMax bounds a write request: one envelope plus a batch of
// entries.
const RequestBytesMax = gate.MutationJSONBytesMax + 64<<10

// EntriesMax bounds the entries of one write (one segment).
const EntriesMax = 100

// Table is the business table; the gate's coverage guard protects it.
// Each resource keeps its own row of a key (the column resource names
// it): the guard admits a row only under an accept of its own resource,
// so one resource's lock never writes another's rows. A key's value is
// its latest row (the column written orders them), whichever resource
// wrote it.
const Table = "ledger_values"

// Config configures a Server.
type Config struct {
	// DB is the ledger's database (sqlgate.OpenSQLite, or sql.Open("pgx",
	// …) with Postgres set). Required.
	DB *sql.DB
	// Postgres selects the PostgreSQL dialect. Optional, defaults to SQLite.
	Postgres bool
	// Verifier checks grants and status proofs against the registry's
	// trust bundle. Required unless LeaseOnly.
	Verifier *grant.Verifier
	// Auth maps a request's bearer token (or client certificate) to the
	// caller's workload identity. Required.
	Auth httpapi.Authenticator
	// LeaseOnly is the negative control: no gate, every authenticated write
	// lands. Never use it for anything but showing what the gate prevents.
	LeaseOnly bool
	// Admins may use the gate's admin endpoint (gateadmin.Handler at
	// /v1/gate/: status, resume after FENCE_REGRESSION), authenticated like
	// every other caller. Optional: without admins it is not mounted.
	Admins []string
	// TracerProvider receives the gate's decision spans. Optional,
	// defaults to otel's global provider.
	TracerProvider trace.TracerProvider
}

// Server is the ledger's HTTP service.
type Server struct {
	cfg     Config
	g       *sqlgate.Gate // nil when LeaseOnly
	mux     *http.ServeMux
	unknown *gatemetrics.UnknownTracker
	log     *report.Log // the gate's last decisions, for the dashboard
}

// NewServer creates the business table, migrates the gate's tables and
// protects the business table (enforce mode) unless LeaseOnly.
func NewServer(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.DB == nil || cfg.Auth == nil {
		return nil, errors.New("ledger: Config.DB and Config.Auth are required")
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux()}
	for _, ddl := range []string{`CREATE TABLE IF NOT EXISTS ` + Table + ` (
		resource TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, writer TEXT NOT NULL, fence BIGINT NOT NULL, written BIGINT NOT NULL,
		PRIMARY KEY (resource, key))`,
		`CREATE INDEX IF NOT EXISTS ` + Table + `_by_key ON ` + Table + ` (key, written)`} {
		if _, err := cfg.DB.ExecContext(ctx, ddl); err != nil {
			return nil, fmt.Errorf("ledger: create table: %w", err)
		}
	}
	if !cfg.LeaseOnly {
		if cfg.Verifier == nil {
			return nil, errors.New("ledger: Config.Verifier is required unless LeaseOnly")
		}
		d := sqlgate.SQLite
		if cfg.Postgres {
			d = sqlgate.Postgres
		}
		g, err := sqlgate.New(sqlgate.Config{Dialect: d, Policy: gate.Policy{Verifier: cfg.Verifier}})
		if err != nil {
			return nil, err
		}
		if err := g.Migrate(ctx, cfg.DB); err != nil {
			return nil, fmt.Errorf("ledger: migrate gate tables: %w", err)
		}
		if err := g.Protect(ctx, cfg.DB, Table, gate.ModeEnforce, "ledger"); err != nil {
			return nil, fmt.Errorf("ledger: protect %s: %w", Table, err)
		}
		s.g = g
		s.unknown = gatemetrics.NewUnknownTracker(nil)
		s.log = report.NewLog(nil)
		s.mux.Handle("GET /metrics", s.metricsHandler())
		if len(cfg.Admins) > 0 {
			// One call: the operator's way back from a FENCE_REGRESSION pause.
			s.mux.Handle(gateadmin.PathPrefix, gateadmin.Handler(gateadmin.HandlerConfig{Gate: g, DB: cfg.DB, Auth: cfg.Auth, Admins: cfg.Admins}))
		}
	}
	s.mux.HandleFunc("POST /v1/entries", s.handleWrite)
	s.mux.HandleFunc("GET /v1/receipts", s.handleReceipts)
	s.mux.HandleFunc("GET /v1/values", s.handleValue)
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// WriteRequest is the body of POST /v1/entries. Mutation is absent only
// against a LeaseOnly ledger.
type WriteRequest struct {
	Mutation *gate.Mutation `json:"mutation,omitempty"`
	Entries  []Entry        `json:"entries"`
}

// WriteResponse is the answer to a write: ACCEPTED or REPLAYED with the
// receipt in gate's JSON form (200), or the gate's rejection code and
// reason (409).
type WriteResponse struct {
	Outcome      string        `json:"outcome"`
	Reason       string        `json:"reason,omitempty"`
	FenceToken   uint64        `json:"fenceToken,omitempty"`
	HighestFence uint64        `json:"highestFence,omitempty"`
	Receipt      *gate.Receipt `json:"receipt,omitempty"`
}

func (s *Server) handleWrite(w http.ResponseWriter, r *http.Request) {
	caller, err := s.cfg.Auth.Authenticate(r)
	if err != nil {
		writeJSON(w, http.StatusUnauthorized, WriteResponse{Outcome: "UNAUTHENTICATED", Reason: err.Error()})
		return
	}
	var req WriteRequest
	if err := decodeBody(r, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, WriteResponse{Outcome: string(gate.Malformed), Reason: err.Error()})
		return
	}
	if len(req.Entries) == 0 || len(req.Entries) > EntriesMax {
		writeJSON(w, http.StatusBadRequest, WriteResponse{Outcome: string(gate.Malformed), Reason: fmt.Sprintf("want 1 to %d entries", EntriesMax)})
		return
	}
	if s.cfg.LeaseOnly { // the negative control: no fence, no proof, no receipt
		err := s.upsert(r.Context(), s.cfg.DB, caller, "", 0, req.Entries)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, WriteResponse{Outcome: "ERROR", Reason: err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, WriteResponse{Outcome: string(gate.Accepted), Reason: "lease-only: written without any check"})
		return
	}
	m := req.Mutation
	if m == nil {
		writeJSON(w, http.StatusBadRequest, WriteResponse{Outcome: string(gate.Malformed), Reason: "no mutation envelope"})
		return
	}
	// The gate sees only the digest; the ledger must make sure the entries
	// it writes are the ones the digest (and so the receipt) stands for.
	if m.PayloadDigest != PayloadDigest(req.Entries) {
		writeJSON(w, http.StatusBadRequest, WriteResponse{Outcome: string(gate.Malformed), Reason: "payloadDigest is not the digest of the entries"})
		return
	}
	// The worker's trace (W3C traceparent) continues into the decision span.
	ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	rcpt, err := gatetrace.Tracer{Provider: s.cfg.TracerProvider}.Run(ctx, s.g, s.cfg.DB, caller, m, func(ctx context.Context, tx *sql.Tx) error {
		return s.upsert(ctx, tx, caller, m.Resource, m.FenceToken, req.Entries)
	})
	s.log.Note(caller, m, err) // after the decision: a copy into a ring, for the dashboard
	s.answerGate(w, rcpt, err)
}

// answerGate turns the gate's result into the HTTP answer.
func (s *Server) answerGate(w http.ResponseWriter, rcpt gate.Receipt, err error) {
	if gate.IsSuccess(err) {
		writeJSON(w, http.StatusOK, WriteResponse{Outcome: string(gate.OutcomeOf(err)), Receipt: &rcpt, FenceToken: rcpt.FenceToken})
		return
	}
	var rej *gate.Rejection
	if errors.As(err, &rej) {
		writeJSON(w, http.StatusConflict, WriteResponse{Outcome: string(rej.Outcome), Reason: rej.Reason,
			FenceToken: rej.FenceToken, HighestFence: rej.HighestFence})
		return
	}
	// A database or commit error: the caller cannot know whether the write
	// committed, and must settle it by operation ID (MUTATION_UNKNOWN).
	writeJSON(w, http.StatusInternalServerError, WriteResponse{Outcome: "ERROR", Reason: err.Error()})
}

// upsert is the business change: each entry's row of resource, the
// latest of its key. Inside Run, q is the gate's transaction.
func (s *Server) upsert(ctx context.Context, q sqlgate.DBTX, writer, resource string, fence uint64, entries []Entry) error {
	stmt := `INSERT INTO ` + Table + ` (resource, key, value, writer, fence, written)
		VALUES (?, ?, ?, ?, ?, (SELECT coalesce(max(written), 0) + 1 FROM ` + Table + `))
		ON CONFLICT (resource, key) DO UPDATE SET value = excluded.value, writer = excluded.writer, fence = excluded.fence, written = excluded.written`
	if s.cfg.Postgres {
		stmt = strings.NewReplacer("?, ?, ?, ?, ?,", "$1, $2, $3, $4, $5,").Replace(stmt)
	}
	for _, e := range entries {
		if _, err := q.ExecContext(ctx, stmt, resource, e.Key, e.Value, writer, int64(fence)); err != nil {
			return fmt.Errorf("ledger: write %q: %w", e.Key, err)
		}
	}
	return nil
}

func (s *Server) handleReceipts(w http.ResponseWriter, r *http.Request) {
	if s.g == nil {
		writeJSON(w, http.StatusNotFound, WriteResponse{Outcome: "NO_RECEIPTS", Reason: "a lease-only ledger keeps no receipts"})
		return
	}
	q := r.URL.Query()
	fence, err := strconv.ParseUint(q.Get("fence"), 10, 64)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, WriteResponse{Outcome: string(gate.Malformed), Reason: "fence: " + err.Error()})
		return
	}
	ans, err := s.g.QueryOperation(r.Context(), s.cfg.DB, q.Get("resource"), q.Get("operation"), fence)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, WriteResponse{Outcome: "ERROR", Reason: err.Error()})
		return
	}
	s.unknown.Observe(q.Get("resource"), q.Get("operation"), ans.Verdict)
	writeJSON(w, http.StatusOK, ans) // gate.Answer's JSON form
}

// metricsHandler serves the gate's decision counters, its paused
// resources and its open UNKNOWN operations (gate/gatemetrics).
func (s *Server) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(gatemetrics.NewCollector(s.g.Counters(), nil), gatemetrics.NewStateCollector(func(ctx context.Context) (int, int64, error) { return s.g.Paused(ctx, s.cfg.DB) }, nil, nil))
	reg.MustRegister(s.unknown.Collectors(nil)...)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// Value is one row of the business table.
type Value struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Writer string `json:"writer"`
	Fence  uint64 `json:"fence"`
}

func (s *Server) handleValue(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	stmt := `SELECT value, writer, fence FROM ` + Table + ` WHERE key = ? ORDER BY written DESC LIMIT 1`
	if s.cfg.Postgres {
		stmt = `SELECT value, writer, fence FROM ` + Table + ` WHERE key = $1 ORDER BY written DESC LIMIT 1`
	}
	v := Value{Key: key}
	var fence int64
	err := s.cfg.DB.QueryRowContext(r.Context(), stmt, key).Scan(&v.Value, &v.Writer, &fence)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		writeJSON(w, http.StatusNotFound, v)
	case err != nil:
		writeJSON(w, http.StatusInternalServerError, WriteResponse{Outcome: "ERROR", Reason: err.Error()})
	default:
		v.Fence = uint64(fence)
		writeJSON(w, http.StatusOK, v)
	}
}

func decodeBody(r *http.Request, v any) error {
	d := json.NewDecoder(io.LimitReader(r.Body, RequestBytesMax))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("ledger: request body: %w", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
