package httpclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// ResponseBytesMax bounds a response body the Client reads, 1 MiB.
const ResponseBytesMax = 1 << 20

// ErrBadResponse: the server's answer is not what the API promises
// (undecodable JSON, a grant or status that does not parse strictly, a
// status about another grant, a proof that does not verify).
var ErrBadResponse = errors.New("httpclient: bad response")

// Client is a small typed client of /v1, and the SDK's client.Transport
// (and client.LockViewer) over HTTP: its lease calls (Acquire, Renew,
// Release, Status, QueryRequest) and lock views (LockStatus, WatchLock)
// answer in the registry's own Go terms — a grant parsed straight into
// wire.Issued, and errors in the client's contract (callError): a
// registry code comes back as its registry sentinel (errors.Is(err,
// wire.ErrBusy), wire.CodeOf(err) == "BUSY"), a refusal by the HTTP layer
// wraps client.ErrRefused, and everything that may or may not have been
// applied wraps client.ErrOutcomeUnknown. Each keeps the *APIError, when
// there is one, for errors.As. The admin calls return their *APIError
// as it came. It does no retries of its own (an acquire is retried by
// the caller with the same request ID).
type Client struct {
	base  string
	http  *http.Client
	token string
	// authorization is the Authorization header's value, built once.
	authorization []string
	// verifier, when set, checks every proof the server returns.
	verifier *grant.Verifier
	// headers, when set, adds headers to every request (trace context).
	headers func(context.Context, http.Header)
	// batch, when set, coalesces concurrent calls (WithBatching).
	batch *batcher
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithHTTPClient sets the http.Client (for mTLS: its Transport's
// TLSClientConfig carries the client certificate; NewHTTPClient gives one
// that keeps enough connections). Default: one http.Client shared by every
// Client of this package, NewHTTPClient(nil).
func WithHTTPClient(h *http.Client) ClientOption { return func(c *Client) { c.http = h } }

// WithHeaders calls f on every request before it is sent, to add headers:
// trace propagation, for example (otel.GetTextMapPropagator().Inject with
// a propagation.HeaderCarrier). The SDK links no telemetry of its own.
func WithHeaders(f func(ctx context.Context, h http.Header)) ClientOption {
	return func(c *Client) { c.headers = f }
}

// WithBearerToken sends "Authorization: Bearer <token>" on every call.
func WithBearerToken(tok string) ClientOption {
	return func(c *Client) { c.token, c.authorization = tok, []string{"Bearer " + tok} }
}

// headerJSON is every request body's Content-Type value, shared: net/http
// only reads a request's header values.
var headerJSON = []string{"application/json"}

// WithVerifier checks every grant and status proof the server returns
// against v; a proof that fails is ErrBadResponse. Default: not checked
// (the gate checks them anyway).
func WithVerifier(v *grant.Verifier) ClientOption { return func(c *Client) { c.verifier = v } }

// NewClient returns a client of the server at baseURL ("https://host:port").
func NewClient(baseURL string, opts ...ClientOption) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("httpclient: base URL %q: want http(s)://host[:port]", baseURL)
	}
	c := &Client{base: strings.TrimRight(baseURL, "/"), http: sharedHTTPClient()}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

var (
	_ client.Transport  = (*Client)(nil)
	_ client.LockViewer = (*Client)(nil)
)

// Acquire calls POST /v1/acquire (with WithBatching and no wait, maybe
// as one operation of POST /v1/batch).
func (c *Client) Acquire(ctx context.Context, req wire.AcquireRequest) (wire.Issued, error) {
	if req.WaitMs > 0 {
		return c.issued(ctx, http.MethodPost, "/v1/acquire", req)
	}
	return c.postIssued(ctx, wire.BatchAcquire, "/v1/acquire", req)
}

// Renew calls POST /v1/renew (or, with WithBatching, maybe POST
// /v1/batch).
func (c *Client) Renew(ctx context.Context, resource, lease string) (wire.Issued, error) {
	return c.postIssued(ctx, wire.BatchRenew, "/v1/renew", wire.LeaseRequest{Resource: resource, Lease: lease})
}

// Release calls POST /v1/release (or, with WithBatching, maybe POST
// /v1/batch).
func (c *Client) Release(ctx context.Context, resource, lease string) error {
	var out wire.ReleaseResponse
	return callError(c.post(ctx, wire.BatchRelease, "/v1/release", wire.LeaseRequest{Resource: resource, Lease: lease}, &out))
}

// Status calls POST /v1/status, the linearizable status query, with g's
// canonical text (or, with WithBatching, maybe POST /v1/batch).
func (c *Client) Status(ctx context.Context, g *grant.Grant) (wire.Issued, error) {
	return c.postIssued(ctx, wire.BatchStatus, "/v1/status", wire.StatusRequest{Grant: string(g.Encode())})
}

// QueryRequest calls GET /v1/requests/{requestId}: the grant issued to
// this caller under requestID, for recovery after a lost acquire response.
func (c *Client) QueryRequest(ctx context.Context, requestID string) (wire.Issued, error) {
	return c.issued(ctx, http.MethodGet, "/v1/requests/"+url.PathEscape(requestID), nil)
}

// RevokeEpochsBelow calls POST /v1/admin/revoke-epochs.
func (c *Client) RevokeEpochsBelow(ctx context.Context, below uint64) (uint64, error) {
	return c.RevokeEpochs(ctx, wire.RevokeEpochsRequest{Below: below})
}

// RevokeEpochs calls POST /v1/admin/revoke-epochs with a note for the
// audit log.
func (c *Client) RevokeEpochs(ctx context.Context, req wire.RevokeEpochsRequest) (uint64, error) {
	var out wire.RevokeEpochsResponse
	err := c.do(ctx, http.MethodPost, "/v1/admin/revoke-epochs", req, &out)
	return out.RevokedBelowEpoch, err
}

// SetPolicyGeneration calls POST /v1/admin/policy.
func (c *Client) SetPolicyGeneration(ctx context.Context, resource string, gen uint64) (wire.ResourceInfo, error) {
	return c.SetPolicy(ctx, wire.PolicyRequest{Resource: resource, Generation: gen})
}

// SetPolicy calls POST /v1/admin/policy with a note for the audit log.
func (c *Client) SetPolicy(ctx context.Context, req wire.PolicyRequest) (wire.ResourceInfo, error) {
	var out wire.ResourceInfo
	err := c.do(ctx, http.MethodPost, "/v1/admin/policy", req, &out)
	return out, err
}

// RaiseFloor calls POST /v1/admin/floor.
func (c *Client) RaiseFloor(ctx context.Context, resource string, fence uint64) (wire.ResourceInfo, error) {
	return c.Floor(ctx, wire.FloorRequest{Resource: resource, Fence: fence})
}

// Floor calls POST /v1/admin/floor with a note for the audit log.
func (c *Client) Floor(ctx context.Context, req wire.FloorRequest) (wire.ResourceInfo, error) {
	var out wire.ResourceInfo
	err := c.do(ctx, http.MethodPost, "/v1/admin/floor", req, &out)
	return out, err
}

// Resource calls POST /v1/admin/resource.
func (c *Client) Resource(ctx context.Context, resource string) (wire.ResourceInfo, error) {
	var out wire.ResourceInfo
	err := c.do(ctx, http.MethodPost, "/v1/admin/resource", wire.ResourceRequest{Resource: resource}, &out)
	return out, err
}

// BumpFenceRange calls POST /v1/admin/fence-range: every resource's
// next fence above every fence issued before, every earlier lease ended.
// It may take the registry's clock up to a second and its skew bound.
func (c *Client) BumpFenceRange(ctx context.Context, req wire.FenceRangeBumpRequest) (wire.FenceRange, error) {
	var out wire.FenceRange
	err := c.do(ctx, http.MethodPost, "/v1/admin/fence-range", req, &out)
	return out, err
}

// FenceRange calls GET /v1/admin/fence-range/current.
func (c *Client) FenceRange(ctx context.Context) (wire.FenceRange, error) {
	var out wire.FenceRange
	err := c.do(ctx, http.MethodGet, "/v1/admin/fence-range/current", nil, &out)
	return out, err
}

// issued sends a call answered with a grant and parses the answer
// (parseIssued); its error is the client's contract (callError).
func (c *Client) issued(ctx context.Context, method, path string, in any) (wire.Issued, error) {
	var out wire.IssuedResponse
	if err := c.do(ctx, method, path, in, &out); err != nil {
		return wire.Issued{}, callError(err)
	}
	is, err := c.parseIssued(out)
	return is, callError(err)
}

// postIssued is issued for a call a batch may carry as operation op.
func (c *Client) postIssued(ctx context.Context, op, path string, in any) (wire.Issued, error) {
	var out wire.IssuedResponse
	if err := c.post(ctx, op, path, in, &out); err != nil {
		return wire.Issued{}, callError(err)
	}
	is, err := c.parseIssued(out)
	return is, callError(err)
}

// parseIssued parses the answer straight into wire.Issued: both messages
// strictly (so each re-encodes to the exact bytes its proof covers),
// the status checked to be about this grant and, with a verifier, both
// proofs checked. A fresh grant carrying its own HELD statement
// (heldUntil) may come without a status (Issued.Status nil); any other
// answer must have one.
func (c *Client) parseIssued(r wire.IssuedResponse) (wire.Issued, error) {
	bad := func(format string, args ...any) (wire.Issued, error) {
		return wire.Issued{}, fmt.Errorf("%w: "+format, append([]any{ErrBadResponse}, args...)...)
	}
	g, err := grant.ParseGrant([]byte(r.Grant))
	if err != nil {
		return bad("grant: %w", err)
	}
	var st *grant.Status
	switch {
	case r.Status == "" && r.StatusProof == "" && g.HeldStatement() && r.GrantProof != "":
	default:
		if st, err = grant.ParseStatus([]byte(r.Status)); err != nil {
			return bad("status: %w", err)
		}
		if st.Grant != g.Digest() {
			return bad("status is about grant %s, not %s", st.Grant, g.Digest())
		}
	}
	// A gate's status proof travels exactly when the registry's does.
	if err := grant.ValidateGateProofs(r.GateProofs, r.StatusProof != ""); err != nil {
		return bad("gateProofs: %v", err)
	}
	if r.GrantProof == "" && len(r.GateProofs) > 0 {
		return bad("gate proofs for a grant without a proof")
	}
	if err := c.verify(g, r.GrantProof, st, r.StatusProof); err != nil {
		return wire.Issued{}, err
	}
	return wire.Issued{Grant: g, GrantProof: r.GrantProof, Status: st, StatusProof: r.StatusProof,
		ExpiresAfterMs: max(r.ExpiresAfterMs, 0), GateProofs: r.GateProofs}, nil
}

// verify checks the grant's and the status's proofs with the Client's
// verifier, if it has one. An empty proof is a revoked epoch's: no proof,
// and the status says so.
func (c *Client) verify(g *grant.Grant, grantProof string, st *grant.Status, statusProof string) error {
	if c.verifier == nil {
		return nil
	}
	type signed struct {
		m     grant.Message
		proof string
	}
	check := []signed{{g, grantProof}}
	if st != nil {
		check = append(check, signed{st, statusProof})
	}
	for _, p := range check {
		if p.proof == "" {
			continue
		}
		if err := c.verifier.Verify(p.m, p.proof); err != nil {
			return fmt.Errorf("%w: %s proof: %w", ErrBadResponse, p.m.Schema(), err)
		}
	}
	return nil
}

// do sends in as JSON (none when nil) and decodes a 200 into out, or an
// error body into *APIError.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	b, err := c.exchange(ctx, method, path, in)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%w: %s %s: %v", ErrBadResponse, method, path, err)
	}
	return nil
}

// exchange is do up to the decoding: a 200's body, or the error do
// returns.
func (c *Client) exchange(ctx context.Context, method, path string, in any) ([]byte, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("httpclient: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("httpclient: %w", err)
	}
	if in != nil {
		req.Header["Content-Type"] = headerJSON
	}
	if c.token != "" {
		req.Header["Authorization"] = c.authorization
	}
	if c.headers != nil {
		c.headers(ctx, req.Header)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("httpclient: %w", err) // *url.Error: it names the method and URL
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, ResponseBytesMax+1))
	if err != nil {
		return nil, fmt.Errorf("httpclient: %s %s: reading response: %w", method, path, err)
	}
	if len(b) > ResponseBytesMax {
		return nil, fmt.Errorf("%w: %s %s: above %d bytes", ErrBadResponse, method, path, ResponseBytesMax)
	}
	if resp.StatusCode != http.StatusOK {
		var eb wire.ErrorBody
		if json.Unmarshal(b, &eb) != nil {
			eb = wire.ErrorBody{}
		}
		return nil, apiError(resp.StatusCode, eb, strings.TrimSpace(string(b)))
	}
	return b, nil
}

// Ready calls GET /readyz: nil when the server answers and its store
// serves a linearizable read, else the cause (unreachable, or the
// store's error). Client tools use it to fail fast, with the reason,
// instead of retrying against a registry that is not there.
func (c *Client) Ready(ctx context.Context) error {
	var h wire.Health
	err := c.do(ctx, http.MethodGet, "/readyz", nil, &h)
	if err != nil {
		return &layered{words: "registry " + c.base + " not ready: ", err: err}
	}
	return nil
}

// QueryStatus makes Client a gate.StatusQuerier: the linearizable status
// query (POST /v1/status) about g, answering its state and the issuer
// epoch of the statement. Give the gate's client WithVerifier, so that
// every answer's proof is checked against the gate's trust bundle, and
// use it over mTLS or a bearer token of the gate's own identity. A
// statement about another grant is ErrBadResponse; any error means
// "cannot prove HELD", which the gate never accepts on.
func (c *Client) QueryStatus(ctx context.Context, g *grant.Grant) (grant.State, uint64, error) {
	is, err := c.Status(ctx, g)
	if err != nil {
		return "", 0, err
	}
	if is.Status == nil {
		return "", 0, fmt.Errorf("%w: status query answered without a status", ErrBadResponse)
	}
	if is.Status.Grant != g.Digest() {
		return "", 0, fmt.Errorf("%w: status is about grant %s, not %s", ErrBadResponse, is.Status.Grant, g.Digest())
	}
	return is.Status.State, is.Status.IssuerEpoch, nil
}

// TrustBundle calls GET /v1/trust-bundle. The answer is not verified
// here: a gate checks it against the bundle it holds
// (grant.Bundle.VerifyUpdate).
func (c *Client) TrustBundle(ctx context.Context) (grant.SignedBundle, error) {
	var sb grant.SignedBundle
	err := c.do(ctx, http.MethodGet, "/v1/trust-bundle", nil, &sb)
	return sb, err
}

// apiError is the error response eb with HTTP status, or, when eb has
// no code, an INTERNAL one whose message is raw.
func apiError(status int, eb wire.ErrorBody, raw string) *APIError {
	if eb.Code == "" {
		return &APIError{Status: status, Code: wire.CodeInternal, Message: raw}
	}
	return &APIError{Status: status, Code: eb.Code, Message: eb.Message, Busy: eb.Busy}
}

// APIError is an error response as the Client returns it. It carries the
// HTTP status as well as the body.
type APIError struct {
	Status  int
	Code    string
	Message string
	// Busy, with BUSY and WAIT_TIMEOUT, is who holds the resource: the
	// lease calls' errors carry it as a *wire.BusyError.
	Busy *wire.BusyDetail
}

func (e *APIError) Error() string {
	return fmt.Sprintf("httpclient: %s (%d %s): %s", e.Code, e.Status, http.StatusText(e.Status), e.Message)
}

// Is makes errors.Is(err, &APIError{Code: c}) match by code alone, so
// callers can branch on codes without caring about messages or statuses.
func (e *APIError) Is(target error) bool {
	t, ok := target.(*APIError)
	return ok && t.Code == e.Code && t.Message == "" && t.Status == 0
}

// IdleConnsPerHostMax is how many idle connections to one registry the
// SDK's HTTP clients keep for the next call, 256. A worker makes one call
// per goroutine at a time, each on a connection of its own (HTTP/1.1);
// http.DefaultTransport keeps 2, so a worker with more goroutines than
// that opened a connection for most calls (a TCP handshake, new buffers,
// a socket in TIME_WAIT) instead of reusing one. Connections idle longer
// than http.DefaultTransport's IdleConnTimeout (90 s) are still closed.
const IdleConnsPerHostMax = 256

// NewHTTPClient returns an http.Client for the registry: the settings of
// http.DefaultTransport (proxy, dial and TLS handshake timeouts, HTTP/2
// over TLS) with IdleConnsPerHostMax idle connections kept, and tlsCfg
// as its TLS configuration when not nil.
func NewHTTPClient(tlsCfg *tls.Config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = IdleConnsPerHostMax, IdleConnsPerHostMax
	if tlsCfg != nil {
		tr.TLSClientConfig = tlsCfg
	}
	return &http.Client{Transport: tr}
}

// sharedHTTPClient is the default of every Client: one pool of
// connections per process, as http.DefaultClient would be.
var sharedHTTPClient = sync.OnceValue(func() *http.Client { return NewHTTPClient(nil) })

// ClientTLSFiles names the PEM files a client's TLS uses; every field is
// optional.
type ClientTLSFiles struct {
	// CAFile verifies the server's certificate; empty: the system roots.
	CAFile string
	// CertFile and KeyFile are the client certificate (mTLS identity) and
	// its key; together or not at all.
	CertFile, KeyFile string
}

// HTTPClient returns NewHTTPClient with f's TLS settings, or the
// Client's default (shared) one when f is empty.
func (f ClientTLSFiles) HTTPClient() (*http.Client, error) {
	if f == (ClientTLSFiles{}) {
		return sharedHTTPClient(), nil
	}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, fmt.Errorf("httpclient: client tls: a certificate and its key go together")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CAFile != "" {
		pem, err := os.ReadFile(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("httpclient: client tls: CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("httpclient: client tls: CA %s: no PEM certificates", f.CAFile)
		}
		cfg.RootCAs = pool
	}
	if f.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("httpclient: client tls: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return NewHTTPClient(cfg), nil
}

// LockStatus calls GET /v1/locks/{resource}: who holds the resource,
// since when, for how long, the fences and the queue.
func (c *Client) LockStatus(ctx context.Context, resource string) (wire.LockStatus, error) {
	var v wire.LockStatus
	err := c.do(ctx, http.MethodGet, "/v1/locks/"+resource, nil, &v)
	return v, callError(err)
}

// WatchLock calls GET /v1/locks/{resource}?waitMs=&afterRevision=: it
// answers once the lock differs from what was seen at afterRevision (the
// record changed, or a lease or lock-delay ran out), or after wait (at
// most a minute). Give ctx room for the wait.
func (c *Client) WatchLock(ctx context.Context, resource string, afterRevision uint64, wait time.Duration) (wire.LockStatus, error) {
	var v wire.LockStatus
	q := url.Values{"waitMs": {strconv.FormatInt(wait.Milliseconds(), 10)}, "afterRevision": {strconv.FormatUint(afterRevision, 10)}}
	err := c.do(ctx, http.MethodGet, "/v1/locks/"+resource+"?"+q.Encode(), nil, &v)
	return v, callError(err)
}

// ListLocks calls GET /v1/locks: one page of the locks under prefix that
// the caller may see, after after, at most limit (0: the server's default
// of 100). The answer's Next is the after of the next page.
func (c *Client) ListLocks(ctx context.Context, prefix, after string, limit int) (wire.LockList, error) {
	q := url.Values{}
	for k, v := range map[string]string{"prefix": prefix, "after": after} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/v1/locks"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var l wire.LockList
	err := c.do(ctx, http.MethodGet, path, nil, &l)
	return l, err
}

// Break calls POST /v1/break: end resource's lease now and hand it to the
// next waiter (an admin, or an identity the resource policy lets break
// it). note says why, for the audit log.
func (c *Client) Break(ctx context.Context, resource, note string) (wire.BreakResponse, error) {
	var out wire.BreakResponse
	err := c.do(ctx, http.MethodPost, "/v1/break", wire.BreakRequest{Resource: resource, Note: note}, &out)
	return out, err
}

var _ client.SetTransport = (*Client)(nil)

// AcquireSet calls POST /v1/lockset/acquire: every member of req at
// once, or none. Each member's answer is parsed as Acquire's is.
func (c *Client) AcquireSet(ctx context.Context, req wire.LockSetRequest) (wire.IssuedSet, error) {
	return c.issuedSet(ctx, "/v1/lockset/acquire", req, len(req.Members))
}

// RenewSet calls POST /v1/lockset/renew: every member's lease renewed
// in one registry transaction, or none.
func (c *Client) RenewSet(ctx context.Context, leases []wire.LeaseRequest) (wire.IssuedSet, error) {
	return c.issuedSet(ctx, "/v1/lockset/renew", wire.LockSetLeasesRequest{Leases: leases}, len(leases))
}

// ReleaseSet calls POST /v1/lockset/release: every member's lease
// released in one registry transaction.
func (c *Client) ReleaseSet(ctx context.Context, leases []wire.LeaseRequest) error {
	var out wire.LockSetReleaseResponse
	return callError(c.do(ctx, http.MethodPost, "/v1/lockset/release", wire.LockSetLeasesRequest{Leases: leases}, &out))
}

// issuedSet sends a lock set's call and parses every member's answer
// (parseIssued); an answer naming another number of members than n is
// ErrBadResponse.
func (c *Client) issuedSet(ctx context.Context, path string, in any, n int) (wire.IssuedSet, error) {
	var out wire.IssuedSetResponse
	if err := c.do(ctx, http.MethodPost, path, in, &out); err != nil {
		return wire.IssuedSet{}, callError(err)
	}
	if len(out.Members) != n {
		return wire.IssuedSet{}, callError(fmt.Errorf("%w: %s: %d members answered, not %d", ErrBadResponse, path, len(out.Members), n))
	}
	set := wire.IssuedSet{Members: make([]wire.Issued, n)}
	for i, r := range out.Members {
		is, err := c.parseIssued(r)
		if err != nil {
			return wire.IssuedSet{}, callError(fmt.Errorf("members[%d]: %w", i, err))
		}
		set.Members[i] = is
	}
	return set, nil
}

// Downgrade calls POST /v1/downgrade: the caller's write lease becomes a
// reader's lease (wire.DowngradeRequest).
func (c *Client) Downgrade(ctx context.Context, req wire.DowngradeRequest) (wire.Issued, error) {
	return c.issued(ctx, http.MethodPost, "/v1/downgrade", req)
}
