package chaosproc

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/fencegate/fencegate/chaos/record"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/wire"
)

// EffectsTable is the service's business table: one row per write it
// applied, appended in the write's own transaction. The checker compares
// it with the gate's receipts, and its id orders the writes of a resource
// (the fence row lock serializes them).
const EffectsTable = "chaos_effects"

// requestBytesMax bounds one write request.
const requestBytesMax = gate.MutationJSONBytesMax + 4096

// ServiceConfig configures a resource service.
type ServiceConfig struct {
	Name     string
	DB       *sql.DB // PostgreSQL
	Verifier *grant.Verifier
	Auth     httpapi.Authenticator
	Rec      *record.Writer
	// MutantNoFence is the negative control: no fence check at all. A
	// write whose grant and status statement verify and say HELD is
	// applied (lease-only: the worker believed it held the lease when it
	// built the write), with no receipt. It exists so the checker can be
	// shown to catch what the gate prevents; it is a flag of this test
	// binary only, never of the gate.
	MutantNoFence bool
}

// Service is the chaos resource service.
type Service struct {
	cfg ServiceConfig
	pol gate.Policy
	g   *sqlgate.Gate
	mux *http.ServeMux
}

// NewService creates the business table, migrates the gate and protects
// the table (enforce mode) unless MutantNoFence.
func NewService(ctx context.Context, cfg ServiceConfig) (*Service, error) {
	s := &Service{cfg: cfg, pol: gate.Policy{Verifier: cfg.Verifier}, mux: http.NewServeMux()}
	if _, err := cfg.DB.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+EffectsTable+` (
		id BIGSERIAL PRIMARY KEY, resource TEXT NOT NULL, fence BIGINT NOT NULL, seq BIGINT NOT NULL,
		operation_id TEXT NOT NULL, payload_digest TEXT NOT NULL, grant_digest TEXT NOT NULL, writer TEXT NOT NULL)`); err != nil {
		return nil, fmt.Errorf("chaosproc: create %s: %w", EffectsTable, err)
	}
	if !cfg.MutantNoFence {
		g, err := sqlgate.New(sqlgate.Config{Dialect: sqlgate.Postgres, Policy: s.pol})
		if err != nil {
			return nil, err
		}
		if err := g.Migrate(ctx, cfg.DB); err != nil {
			return nil, err
		}
		if err := g.Protect(ctx, cfg.DB, EffectsTable, gate.ModeEnforce, cfg.Name); err != nil {
			return nil, err
		}
		s.g = g
	}
	s.mux.HandleFunc("POST /v1/write", s.handleWrite)
	s.mux.HandleFunc("GET /v1/receipts", s.handleReceipts)
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// WriteRequest is one segment: the envelope and the payload it digests.
type WriteRequest struct {
	Mutation gate.Mutation `json:"mutation"`
	Payload  string        `json:"payload"`
}

// WriteResponse is the gate's answer.
type WriteResponse struct {
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
	Highest uint64 `json:"highest,omitempty"`
}

// PayloadDigest is the digest a write's envelope carries for payload.
func PayloadDigest(payload string) grant.Digest { return sha256.Sum256([]byte(payload)) }

func (s *Service) handleWrite(w http.ResponseWriter, r *http.Request) {
	caller, err := s.cfg.Auth.Authenticate(r)
	if err != nil {
		writeJSON(w, http.StatusUnauthorized, WriteResponse{Outcome: "UNAUTHENTICATED", Reason: err.Error()})
		return
	}
	var req WriteRequest
	d := json.NewDecoder(io.LimitReader(r.Body, requestBytesMax))
	if err := d.Decode(&req); err != nil || req.Mutation.PayloadDigest != PayloadDigest(req.Payload) {
		writeJSON(w, http.StatusBadRequest, WriteResponse{Outcome: string(gate.Malformed), Reason: fmt.Sprint("bad request or payload digest: ", err)})
		return
	}
	m := &req.Mutation
	e := decideEvent(s.cfg.Name, m)
	e.Mutant = s.cfg.MutantNoFence
	var resp WriteResponse
	if s.cfg.MutantNoFence {
		resp = s.applyLeaseOnly(r.Context(), caller, m)
	} else {
		_, err := s.g.Run(r.Context(), s.cfg.DB, caller, m, func(ctx context.Context, tx *sql.Tx) error {
			return insertEffect(ctx, tx, caller, m)
		})
		resp = answer(err)
	}
	e.RetNs, e.Result, e.Highest, e.Detail = record.Now(), resp.Outcome, resp.Highest, resp.Reason
	s.cfg.Rec.Emit(e)
	status := http.StatusOK
	if resp.Outcome == record.ResultUnknown {
		status = http.StatusInternalServerError
	}
	writeJSON(w, status, resp)
}

// decideEvent starts the record of one decision with what the envelope
// carries (parsed without verifying: the gate verifies).
func decideEvent(name string, m *gate.Mutation) record.Event {
	e := record.Event{Kind: record.KindDecide, Proc: name, CallNs: record.Now(), Resource: m.Resource, Lease: m.Lease,
		Fence: m.FenceToken, Seq: m.SegmentSeq, OperationID: m.OperationID, Payload: m.PayloadDigest.String()}
	if g, err := grant.ParseGrant(m.Grant); err == nil {
		e.GrantDigest, e.GrantIssuedMs, e.Owner, e.RequestID = g.Digest().String(), g.IssuedAt.UnixMilli(), g.Owner, g.RequestID
		if gate.ReaderResource(g.Resource) {
			e.Mode = wire.ModeRead // a reader's grant, whatever resource the envelope names
		}
	}
	if st, err := grant.ParseStatus(m.Status); err == nil {
		e.State, e.StatusIssuedMs, e.ValidUntilMs = string(st.State), st.IssuedAt.UnixMilli(), st.ValidUntil.UnixMilli()
	}
	return e
}

// answer turns the gate's result into the response; a database or
// commit error is record.ResultUnknown (the writer must ask the receipts).
func answer(err error) WriteResponse {
	if gate.IsSuccess(err) {
		return WriteResponse{Outcome: string(gate.OutcomeOf(err))}
	}
	var rej *gate.Rejection
	if errors.As(err, &rej) {
		return WriteResponse{Outcome: string(rej.Outcome), Reason: rej.Reason, Highest: rej.HighestFence}
	}
	return WriteResponse{Outcome: record.ResultUnknown, Reason: err.Error()}
}

func insertEffect(ctx context.Context, q sqlgate.DBTX, writer string, m *gate.Mutation) error {
	g, err := grant.ParseGrant(m.Grant)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `INSERT INTO `+EffectsTable+` (resource, fence, seq, operation_id, payload_digest, grant_digest, writer)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, m.Resource, int64(m.FenceToken), int64(m.SegmentSeq), m.OperationID,
		m.PayloadDigest.String(), g.Digest().String(), writer)
	return err
}

// applyLeaseOnly is the mutant: authenticate, trust the HELD statement
// without judging its freshness or the fence, apply.
func (s *Service) applyLeaseOnly(ctx context.Context, caller string, m *gate.Mutation) WriteResponse {
	v, err := s.pol.Authenticate(m, caller)
	if err != nil {
		return answer(err)
	}
	if ev, own := adapt.OwnEvidence(v); !own || ev.State != grant.StateHeld { // a status, or the grant's own held statement
		return WriteResponse{Outcome: string(gate.NotHeld), Reason: "lease-only: no HELD statement"}
	}
	if err := insertEffect(ctx, s.cfg.DB, caller, m); err != nil {
		return WriteResponse{Outcome: record.ResultUnknown, Reason: err.Error()}
	}
	return WriteResponse{Outcome: string(gate.Accepted), Reason: "lease-only: no fence check"}
}

func (s *Service) handleReceipts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	fence, err := strconv.ParseUint(q.Get("fence"), 10, 64)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, WriteResponse{Outcome: string(gate.Malformed), Reason: err.Error()})
		return
	}
	if s.g == nil { // the mutant keeps no receipts: nothing can be settled
		writeJSON(w, http.StatusOK, gate.Answer{Verdict: gate.VerdictUndetermined})
		return
	}
	a, err := s.g.QueryOperation(r.Context(), s.cfg.DB, q.Get("resource"), q.Get("operation"), fence)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, WriteResponse{Outcome: "ERROR", Reason: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, a) // gate.Answer's JSON form
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
