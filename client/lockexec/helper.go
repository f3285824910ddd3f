//go:build unix

package lockexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/strictjson"
)

// The envelope helper's protocol, version 1, on the unix socket named by
// EnvEnvelopeSocket (docs/api.md, "The lock's envelope socket"). Every
// answer is JSON; every refusal is {code, message} with a 4xx status.
//
//	GET  /v1/lease → 200 LeaseInfo
//	GET  /v1/envelope?seq=N&payloadDigest=sha256:HEX → 200 gate.Mutation,
//	     or 409 {code: NOT_HELD | PROOF_STALE}, 400 BAD_REQUEST
//	POST /v1/settle  {"seq": N, "outcome": "ACCEPTED"} (application/json)
//	     → 200 SettleAnswer, or 400 BAD_REQUEST, 415 UNSUPPORTED_MEDIA_TYPE
//
// Under a lock set every call names its member: ?resource=R on the GETs,
// "resource": R in the settle body (400 BAD_REQUEST without it); each
// member counts its own segments, to its own gate. Under a plain lease
// resource may be given and must be the lease's.
//
// An envelope counts as unsettled until the child settles it with the
// resource's final answer; when the child exits, the lease is released
// at once if every envelope is settled, else after the latest unsettled
// envelope's proof can no longer be accepted (client.Lease.Release).
const (
	EnvelopePath = "/v1/envelope"
	LeasePath    = "/v1/lease"
	SettlePath   = "/v1/settle"
)

// settleBodyMax bounds a settle request's body.
const settleBodyMax = 4 << 10

// LeaseInfo is GET /v1/lease.
type LeaseInfo struct {
	Resource  string   `json:"resource"`
	LockSet   []string `json:"lockSet,omitempty"` // a lock set's members, sorted (the set is held and lost whole)
	Lease     string   `json:"lease"`
	Fence     uint64   `json:"fence"`
	State     string   `json:"state"`
	Deadline  string   `json:"deadline"`  // client clock, RFC 3339
	Unsettled int      `json:"unsettled"` // envelopes without a final answer yet
}

// SettleRequest is POST /v1/settle: the resource's answer (a gate
// outcome code) to the envelope of segment Seq.
type SettleRequest struct {
	Resource string `json:"resource,omitempty"` // the member, under a lock set
	Seq      uint64 `json:"seq"`
	Outcome  string `json:"outcome"`
}

// SettleAnswer is the answer to POST /v1/settle. Settled is false for an
// outcome that is not final (SEGMENT_GAP, RESOURCE_PAUSED, NOT_HELD): a
// copy of that envelope could still be accepted, so the release still
// waits for its proof.
type SettleAnswer struct {
	Seq       uint64 `json:"seq"`
	Outcome   string `json:"outcome"`
	Settled   bool   `json:"settled"`
	Unsettled int    `json:"unsettled"`
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
// this user's processes reach it) and builds envelopes from hs, the
// lease's handles (one per member of a lock set).
func serveEnvelopes(path string, hs []*client.Lease) (*helper, error) {
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
		l, err := member(hs, r.URL.Query().Get("resource"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, HelperError{"BAD_REQUEST", err.Error()})
			return
		}
		m, err := l.Envelope(seq, d)
		switch {
		case errors.Is(err, client.ErrProofStale):
			writeJSON(w, http.StatusConflict, HelperError{"PROOF_STALE", err.Error()})
		case errors.Is(err, client.ErrNotCertain):
			writeJSON(w, http.StatusConflict, HelperError{"NOT_HELD", err.Error()})
		case err != nil:
			writeJSON(w, http.StatusBadRequest, HelperError{"BAD_REQUEST", err.Error()})
		default:
			writeJSON(w, http.StatusOK, m)
		}
	})
	mux.HandleFunc("GET "+LeasePath, func(w http.ResponseWriter, r *http.Request) {
		l, err := member(hs, r.URL.Query().Get("resource"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, HelperError{"BAD_REQUEST", err.Error()})
			return
		}
		g := l.Grant()
		info := LeaseInfo{Resource: g.Resource, Lease: g.Lease, Fence: g.FenceToken,
			State: string(l.State()), Deadline: l.Deadline().UTC().Format(time.RFC3339Nano), Unsettled: l.Unsettled()}
		if len(hs) > 1 {
			for _, h := range hs {
				info.LockSet = append(info.LockSet, h.Grant().Resource)
			}
		}
		writeJSON(w, http.StatusOK, info)
	})
	mux.HandleFunc("POST "+SettlePath, func(w http.ResponseWriter, r *http.Request) { settle(w, r, hs) })
	h := &helper{path: path, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

// member is the handle a helper call names (resource): the lease's only
// one when resource is empty or its own; a lock set's member, which a
// call under a set must name.
func member(hs []*client.Lease, resource string) (*client.Lease, error) {
	if resource == "" && len(hs) == 1 {
		return hs[0], nil
	}
	names := make([]string, len(hs))
	for i, h := range hs {
		if h.Grant().Resource == resource {
			return h, nil
		}
		names[i] = h.Grant().Resource
	}
	if resource == "" {
		return nil, fmt.Errorf("resource: a lock set's call names its member, one of %s", strings.Join(names, " "))
	}
	return nil, fmt.Errorf("resource: %q is not held here (held: %s)", resource, strings.Join(names, " "))
}

// settle records the child's report of a resource's answer.
func settle(w http.ResponseWriter, r *http.Request, hs []*client.Lease) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType, HelperError{"UNSUPPORTED_MEDIA_TYPE", "send the body as application/json"})
		return
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, settleBodyMax+1))
	if err != nil || len(b) > settleBodyMax {
		writeJSON(w, http.StatusBadRequest, HelperError{"BAD_REQUEST", fmt.Sprintf("body: unreadable or over %d bytes", settleBodyMax)})
		return
	}
	var req SettleRequest
	if err := strictjson.Decode(b, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, HelperError{"BAD_REQUEST", err.Error()})
		return
	}
	o := gate.Outcome(req.Outcome)
	l, err := member(hs, req.Resource)
	switch {
	case err != nil:
		writeJSON(w, http.StatusBadRequest, HelperError{"BAD_REQUEST", err.Error()})
		return
	case req.Seq == 0:
		writeJSON(w, http.StatusBadRequest, HelperError{"BAD_REQUEST", "seq: want the segment number the envelope was built for, 1 for the first"})
		return
	case !slices.Contains(gate.Outcomes, o):
		writeJSON(w, http.StatusBadRequest, HelperError{"BAD_REQUEST", fmt.Sprintf("outcome %q is not a gate outcome code (ACCEPTED, REPLAYED, STALE_OWNER, …)", req.Outcome)})
		return
	}
	l.Settle(req.Seq, o)
	writeJSON(w, http.StatusOK, SettleAnswer{Seq: req.Seq, Outcome: req.Outcome, Settled: o.Final(), Unsettled: l.Unsettled()})
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
