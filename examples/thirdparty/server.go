// Package thirdparty is an example third-party service — a small payments
// API — that honours idempotency keys the way downstream/httpcall needs,
// and the effect query a caller supplies for it. It stands for an API
// fencegate does not control: it stores no fence, so it cannot refuse a
// superseded owner; what makes it usable under a grant is that one key
// has one effect at most, and that the key's fate can be looked up and,
// when it never took effect, closed for good.
//
// The API:
//
//	POST /v1/charges {account, amountCents}, Idempotency-Key: K
//	    201 the charge; the same K and body again → the same answer with
//	    Idempotent-Replayed: true; the same K, another body → 422; K voided
//	    → 409
//	GET  /v1/charges?idempotency_key=K → 200 the charge, or 404
//	POST /v1/idempotency-keys/K/void → 200 {"voided": true}, or 409 with
//	    the charge if K took effect; from then on K is refused
//
// A charge is stored and its key bound in one step, so the answers about
// a key are never "in progress".
//
//	GET  /v1/charges → every charge (for tests and demos)
package thirdparty

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Charge is one effect of the API.
type Charge struct {
	ID          string `json:"id"`
	Account     string `json:"account"`
	AmountCents int64  `json:"amountCents"`
	Key         string `json:"idempotencyKey"`
}

// ChargeRequest is the body of POST /v1/charges.
type ChargeRequest struct {
	Account     string `json:"account"`
	AmountCents int64  `json:"amountCents"`
}

// keyState is the fate of one idempotency key.
type keyState struct {
	bodyDigest [32]byte
	charge     *Charge // nil when voided
	voided     bool
}

// Server is the API. The zero value is not usable; call NewServer.
type Server struct {
	// AfterCharge, if set, runs after a charge is stored and before it is
	// answered (tests use it to lose the answer). Set it before serving.
	AfterCharge func(key string)

	mu      sync.Mutex
	keys    map[string]*keyState
	charges []Charge
	posts   []string // the key of every POST /v1/charges received, in order
}

// NewServer returns an empty API.
func NewServer() *Server { return &Server{keys: map[string]*keyState{}} }

// ServeHTTP routes the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/charges":
		s.postCharge(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/charges" && r.URL.Query().Has("idempotency_key"):
		s.getByKey(w, r.URL.Query().Get("idempotency_key"))
	case r.Method == http.MethodGet && r.URL.Path == "/v1/charges":
		s.mu.Lock()
		defer s.mu.Unlock()
		reply(w, http.StatusOK, s.charges)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/idempotency-keys/") && strings.HasSuffix(r.URL.Path, "/void"):
		s.void(w, strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/idempotency-keys/"), "/void"))
	default:
		reply(w, http.StatusNotFound, map[string]string{"error": "no such route"})
	}
}

func (s *Server) postCharge(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	var req ChargeRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	s.mu.Lock()
	s.posts = append(s.posts, key)
	if key == "" || err != nil || req.Account == "" || req.AmountCents <= 0 {
		s.mu.Unlock()
		reply(w, http.StatusBadRequest, map[string]string{"error": "want an Idempotency-Key and {account, amountCents > 0}"})
		return
	}
	digest := sha256.Sum256(body)
	if st, ok := s.keys[key]; ok {
		s.mu.Unlock()
		s.replay(w, st, digest)
		return
	}
	st := &keyState{bodyDigest: digest}
	s.keys[key] = st
	c := Charge{ID: fmt.Sprintf("ch_%d", len(s.charges)+1), Account: req.Account, AmountCents: req.AmountCents, Key: key}
	s.charges = append(s.charges, c)
	st.charge = &c
	s.mu.Unlock()
	if s.AfterCharge != nil {
		s.AfterCharge(key)
	}
	reply(w, http.StatusCreated, c)
}

// replay answers a key seen before.
func (s *Server) replay(w http.ResponseWriter, st *keyState, digest [32]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case st.voided:
		reply(w, http.StatusConflict, map[string]string{"error": "idempotency key voided"})
	case st.bodyDigest != digest:
		reply(w, http.StatusUnprocessableEntity, map[string]string{"error": "idempotency key reused with another request"})
	default:
		w.Header().Set("Idempotent-Replayed", "true")
		reply(w, http.StatusCreated, *st.charge)
	}
}

func (s *Server) getByKey(w http.ResponseWriter, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.keys[key]
	switch {
	case !ok || st.voided:
		reply(w, http.StatusNotFound, map[string]string{"error": "no charge with this idempotency key"})
	default:
		reply(w, http.StatusOK, *st.charge)
	}
}

// void closes a key that took no effect, atomically with the check.
func (s *Server) void(w http.ResponseWriter, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.keys[key]
	switch {
	case !ok:
		s.keys[key] = &keyState{voided: true}
		reply(w, http.StatusOK, map[string]bool{"voided": true})
	case st.voided:
		reply(w, http.StatusOK, map[string]bool{"voided": true})
	default:
		reply(w, http.StatusConflict, *st.charge)
	}
}

// Charges returns every charge, and Posts the key of every charge request
// received (refused ones included), in order.
func (s *Server) Charges() []Charge {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Charge(nil), s.charges...)
}

// Posts returns the Idempotency-Key of every POST /v1/charges received.
func (s *Server) Posts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.posts...)
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
