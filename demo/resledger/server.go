package resledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/fencegate/fencegate/demo/ledger"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gatemetrics"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/registry/httpapi"
)

// Server is the ledger's HTTP API over a Store.
type Server struct {
	store     Store
	auth      httpapi.Authenticator
	leaseOnly bool
	mux       *http.ServeMux
	log       *report.Log                 // the gate's last decisions, for the dashboard
	unknown   *gatemetrics.UnknownTracker // receipt queries that could not settle an operation
}

// NewServer serves store; auth maps a bearer token to the caller's
// identity.
func NewServer(store Store, auth httpapi.Authenticator, leaseOnly bool) *Server {
	s := &Server{store: store, auth: auth, leaseOnly: leaseOnly, mux: http.NewServeMux(),
		log: report.NewLog(nil), unknown: gatemetrics.NewUnknownTracker(nil)}
	s.mux.HandleFunc("POST /v1/entries", s.handleWrite)
	s.mux.HandleFunc("GET /v1/receipts", s.handleReceipts)
	s.mux.HandleFunc("GET /v1/values", s.handleValue)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) handleWrite(w http.ResponseWriter, r *http.Request) {
	caller, err := s.auth.Authenticate(r)
	if err != nil {
		writeJSON(w, http.StatusUnauthorized, ledger.WriteResponse{Outcome: "UNAUTHENTICATED", Reason: err.Error()})
		return
	}
	var req ledger.WriteRequest
	d := json.NewDecoder(io.LimitReader(r.Body, ledger.RequestBytesMax))
	d.DisallowUnknownFields()
	if err := d.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, ledger.WriteResponse{Outcome: string(gate.Malformed), Reason: "request body: " + err.Error()})
		return
	}
	if len(req.Entries) == 0 || len(req.Entries) > ledger.EntriesMax {
		writeJSON(w, http.StatusBadRequest, ledger.WriteResponse{Outcome: string(gate.Malformed), Reason: fmt.Sprintf("want 1 to %d entries", ledger.EntriesMax)})
		return
	}
	m := req.Mutation
	switch {
	case s.leaseOnly:
		m = nil // the negative control: no fence, no proof, no receipt
	case m == nil:
		writeJSON(w, http.StatusBadRequest, ledger.WriteResponse{Outcome: string(gate.Malformed), Reason: "no mutation envelope"})
		return
	case m.PayloadDigest != ledger.PayloadDigest(req.Entries):
		writeJSON(w, http.StatusBadRequest, ledger.WriteResponse{Outcome: string(gate.Malformed), Reason: "payloadDigest is not the digest of the entries"})
		return
	}
	rcpt, err := s.store.Write(r.Context(), caller, m, req.Entries)
	if m != nil {
		s.log.Note(caller, m, err) // after the decision: a copy into a ring, for the dashboard
	}
	switch {
	case s.leaseOnly && err == nil:
		writeJSON(w, http.StatusOK, ledger.WriteResponse{Outcome: string(gate.Accepted), Reason: "lease-only: written without any check"})
	case gate.IsSuccess(err):
		writeJSON(w, http.StatusOK, ledger.WriteResponse{Outcome: string(gate.OutcomeOf(err)), Receipt: &rcpt, FenceToken: rcpt.FenceToken})
	default:
		var rej *gate.Rejection
		if errors.As(err, &rej) {
			writeJSON(w, http.StatusConflict, ledger.WriteResponse{Outcome: string(rej.Outcome), Reason: rej.Reason,
				FenceToken: rej.FenceToken, HighestFence: rej.HighestFence})
			return
		}
		// A store error: the caller settles it by operation ID.
		writeJSON(w, http.StatusInternalServerError, ledger.WriteResponse{Outcome: "ERROR", Reason: err.Error()})
	}
}

func (s *Server) handleReceipts(w http.ResponseWriter, r *http.Request) {
	if s.leaseOnly {
		writeJSON(w, http.StatusNotFound, ledger.WriteResponse{Outcome: "NO_RECEIPTS", Reason: "a lease-only ledger keeps no receipts"})
		return
	}
	q := r.URL.Query()
	fence, err := strconv.ParseUint(q.Get("fence"), 10, 64)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, ledger.WriteResponse{Outcome: string(gate.Malformed), Reason: "fence: " + err.Error()})
		return
	}
	ans, err := s.store.QueryOperation(r.Context(), q.Get("resource"), q.Get("operation"), fence)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, ledger.WriteResponse{Outcome: "ERROR", Reason: err.Error()})
		return
	}
	s.unknown.Observe(q.Get("resource"), q.Get("operation"), ans.Verdict)
	writeJSON(w, http.StatusOK, ans) // gate.Answer's JSON form
}

func (s *Server) handleValue(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	v, found, err := s.store.Value(r.Context(), key)
	switch {
	case err != nil:
		writeJSON(w, http.StatusInternalServerError, ledger.WriteResponse{Outcome: "ERROR", Reason: err.Error()})
	case !found:
		writeJSON(w, http.StatusNotFound, ledger.Value{Key: key})
	default:
		writeJSON(w, http.StatusOK, v)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
