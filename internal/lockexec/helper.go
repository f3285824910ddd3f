//go:build unix

package lockexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/grant"
)

// The envelope helper's routes, on the unix socket in EnvEnvelopeSocket:
//
//	GET /v1/envelope?seq=N&payloadDigest=sha256:HEX → 200 gate.Mutation JSON,
//	    or 409 {code: NOT_HELD | PROOF_STALE, message}
//	GET /v1/lease → 200 LeaseInfo
const (
	EnvelopePath = "/v1/envelope"
	LeasePath    = "/v1/lease"
)

// LeaseInfo is GET /v1/lease.
type LeaseInfo struct {
	Resource string `json:"resource"`
	Lease    string `json:"lease"`
	Fence    uint64 `json:"fence"`
	State    string `json:"state"`
	Deadline string `json:"deadline"` // client clock, RFC 3339
}

// HelperError is a refusal of the helper.
type HelperError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type helper struct {
	path string
	srv  *http.Server
}

// serveEnvelopes listens on a unix socket (in a 0700 directory: only
// this user's processes reach it) and builds envelopes from l.
func serveEnvelopes(path string, l *client.Lease) (*helper, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("lockexec: envelope helper: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+EnvelopePath, func(w http.ResponseWriter, r *http.Request) {
		seq, err := strconv.ParseUint(r.URL.Query().Get("seq"), 10, 64)
		if err != nil || seq == 0 {
			writeJSON(w, http.StatusBadRequest, HelperError{"BAD_REQUEST", "seq: want the segment number, 1 for the first"})
			return
		}
		d, err := grant.ParseDigest(r.URL.Query().Get("payloadDigest"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, HelperError{"BAD_REQUEST", "payloadDigest: " + err.Error()})
			return
		}
		m, err := l.Envelope(seq, d)
		switch {
		case errors.Is(err, client.ErrProofStale):
			writeJSON(w, http.StatusConflict, HelperError{"PROOF_STALE", err.Error()})
		case errors.Is(err, client.ErrNotHeld):
			writeJSON(w, http.StatusConflict, HelperError{"NOT_HELD", err.Error()})
		case err != nil:
			writeJSON(w, http.StatusBadRequest, HelperError{"BAD_REQUEST", err.Error()})
		default:
			writeJSON(w, http.StatusOK, m)
		}
	})
	mux.HandleFunc("GET "+LeasePath, func(w http.ResponseWriter, r *http.Request) {
		g := l.Grant()
		writeJSON(w, http.StatusOK, LeaseInfo{Resource: g.Resource, Lease: g.Lease, Fence: g.FenceToken,
			State: string(l.State()), Deadline: l.Deadline().UTC().Format(time.RFC3339Nano)})
	})
	h := &helper{path: path, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

func (h *helper) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return h.srv.Shutdown(ctx)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// HelperClient asks the helper at socket (EnvEnvelopeSocket) for an
// envelope: what `fencegate envelope` does for a child in any language.
func HelperClient(socket string) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
}
