package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/fencegate/fencegate/grant"
)

// ResponseBytesMax bounds a response body the Client reads, 1 MiB.
const ResponseBytesMax = 1 << 20

// ErrBadResponse: the server's answer is not what the API promises
// (undecodable JSON, a grant or status that does not parse strictly, a
// status about another grant, a proof that does not verify).
var ErrBadResponse = errors.New("httpapi: bad response")

// Client is a small typed client of /v1. The client SDK builds on it; it
// does no retries of its own (an acquire is retried by the caller with the
// same request ID).
type Client struct {
	base  string
	http  *http.Client
	token string
	// verifier, when set, checks every proof the server returns.
	verifier *grant.Verifier
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithHTTPClient sets the http.Client (for mTLS: its Transport's
// TLSClientConfig carries the client certificate). Default:
// http.DefaultClient.
func WithHTTPClient(h *http.Client) ClientOption { return func(c *Client) { c.http = h } }

// WithBearerToken sends "Authorization: Bearer <token>" on every call.
func WithBearerToken(tok string) ClientOption { return func(c *Client) { c.token = tok } }

// WithVerifier checks every grant and status proof the server returns
// against v; a proof that fails is ErrBadResponse. Default: not checked
// (the gate checks them anyway).
func WithVerifier(v *grant.Verifier) ClientOption { return func(c *Client) { c.verifier = v } }

// NewClient returns a client of the server at baseURL ("https://host:port").
func NewClient(baseURL string, opts ...ClientOption) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("httpapi: client: base URL %q: want http(s)://host[:port]", baseURL)
	}
	c := &Client{base: strings.TrimRight(baseURL, "/"), http: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Issued is a grant and status as the server sent them, parsed strictly.
// GrantText and StatusText are the exact bytes the proofs cover.
type Issued struct {
	Grant       *grant.Grant
	GrantText   []byte
	GrantProof  string // "" when the grant's epoch is revoked
	Status      *grant.Status
	StatusText  []byte
	StatusProof string
	// ExpiresAfterMs is the answer's IssuedResponse.ExpiresAfterMs (0: not
	// sent).
	ExpiresAfterMs int64
}

// Acquire calls POST /v1/acquire.
func (c *Client) Acquire(ctx context.Context, req AcquireRequest) (*Issued, error) {
	return c.issued(ctx, http.MethodPost, "/v1/acquire", req)
}

// Renew calls POST /v1/renew.
func (c *Client) Renew(ctx context.Context, resource, lease string) (*Issued, error) {
	return c.issued(ctx, http.MethodPost, "/v1/renew", LeaseRequest{Resource: resource, Lease: lease})
}

// Release calls POST /v1/release.
func (c *Client) Release(ctx context.Context, resource, lease string) error {
	var out ReleaseResponse
	return c.do(ctx, http.MethodPost, "/v1/release", LeaseRequest{Resource: resource, Lease: lease}, &out)
}

// Status calls POST /v1/status, the linearizable status query, with the
// grant's canonical text.
func (c *Client) Status(ctx context.Context, grantText []byte) (*Issued, error) {
	return c.issued(ctx, http.MethodPost, "/v1/status", StatusRequest{Grant: string(grantText)})
}

// QueryRequest calls GET /v1/requests/{requestId}: the grant issued to
// this caller under requestID, for recovery after a lost acquire response.
func (c *Client) QueryRequest(ctx context.Context, requestID string) (*Issued, error) {
	return c.issued(ctx, http.MethodGet, "/v1/requests/"+url.PathEscape(requestID), nil)
}

// RevokeEpochsBelow calls POST /v1/admin/revoke-epochs.
func (c *Client) RevokeEpochsBelow(ctx context.Context, below uint64) (uint64, error) {
	return c.RevokeEpochs(ctx, RevokeEpochsRequest{Below: below})
}

// RevokeEpochs calls POST /v1/admin/revoke-epochs with a note for the
// audit log.
func (c *Client) RevokeEpochs(ctx context.Context, req RevokeEpochsRequest) (uint64, error) {
	var out RevokeEpochsResponse
	err := c.do(ctx, http.MethodPost, "/v1/admin/revoke-epochs", req, &out)
	return out.RevokedBelowEpoch, err
}

// SetPolicyGeneration calls POST /v1/admin/policy.
func (c *Client) SetPolicyGeneration(ctx context.Context, resource string, gen uint64) (ResourceInfo, error) {
	return c.SetPolicy(ctx, PolicyRequest{Resource: resource, Generation: gen})
}

// SetPolicy calls POST /v1/admin/policy with a note for the audit log.
func (c *Client) SetPolicy(ctx context.Context, req PolicyRequest) (ResourceInfo, error) {
	var out ResourceInfo
	err := c.do(ctx, http.MethodPost, "/v1/admin/policy", req, &out)
	return out, err
}

// RaiseFloor calls POST /v1/admin/floor.
func (c *Client) RaiseFloor(ctx context.Context, resource string, fence uint64) (ResourceInfo, error) {
	return c.Floor(ctx, FloorRequest{Resource: resource, Fence: fence})
}

// Floor calls POST /v1/admin/floor with a note for the audit log.
func (c *Client) Floor(ctx context.Context, req FloorRequest) (ResourceInfo, error) {
	var out ResourceInfo
	err := c.do(ctx, http.MethodPost, "/v1/admin/floor", req, &out)
	return out, err
}

// Resource calls POST /v1/admin/resource.
func (c *Client) Resource(ctx context.Context, resource string) (ResourceInfo, error) {
	var out ResourceInfo
	err := c.do(ctx, http.MethodPost, "/v1/admin/resource", ResourceRequest{Resource: resource}, &out)
	return out, err
}

func (c *Client) issued(ctx context.Context, method, path string, in any) (*Issued, error) {
	var out IssuedResponse
	if err := c.do(ctx, method, path, in, &out); err != nil {
		return nil, err
	}
	return c.parseIssued(out)
}

// parseIssued parses both messages strictly, checks the status is about
// this grant and, with a verifier, checks both proofs.
func (c *Client) parseIssued(r IssuedResponse) (*Issued, error) {
	g, err := grant.ParseGrant([]byte(r.Grant))
	if err != nil {
		return nil, fmt.Errorf("%w: grant: %w", ErrBadResponse, err)
	}
	st, err := grant.ParseStatus([]byte(r.Status))
	if err != nil {
		return nil, fmt.Errorf("%w: status: %w", ErrBadResponse, err)
	}
	if st.Grant != g.Digest() {
		return nil, fmt.Errorf("%w: status is about grant %s, not %s", ErrBadResponse, st.Grant, g.Digest())
	}
	if c.verifier != nil {
		for _, p := range []struct {
			m     grant.Message
			proof string
		}{{g, r.GrantProof}, {st, r.StatusProof}} {
			if p.proof == "" {
				continue // a revoked epoch: no proof, and the status says so
			}
			if err := c.verifier.Verify(p.m, p.proof); err != nil {
				return nil, fmt.Errorf("%w: %s proof: %w", ErrBadResponse, p.m.Schema(), err)
			}
		}
	}
	return &Issued{
		Grant: g, GrantText: []byte(r.Grant), GrantProof: r.GrantProof,
		Status: st, StatusText: []byte(r.Status), StatusProof: r.StatusProof,
		ExpiresAfterMs: max(r.ExpiresAfterMs, 0),
	}, nil
}

// do sends in as JSON (none when nil) and decodes a 200 into out, or an
// error body into *APIError.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("httpapi: client: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("httpapi: client: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	injectTrace(ctx, req.Header)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("httpapi: client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, ResponseBytesMax+1))
	if err != nil {
		return fmt.Errorf("httpapi: client: %s %s: reading response: %w", method, path, err)
	}
	if len(b) > ResponseBytesMax {
		return fmt.Errorf("%w: %s %s: above %d bytes", ErrBadResponse, method, path, ResponseBytesMax)
	}
	if resp.StatusCode != http.StatusOK {
		var eb ErrorBody
		if err := json.Unmarshal(b, &eb); err != nil || eb.Code == "" {
			return &APIError{Status: resp.StatusCode, Code: CodeInternal, Message: strings.TrimSpace(string(b))}
		}
		return &APIError{Status: resp.StatusCode, Code: eb.Code, Message: eb.Message}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%w: %s %s: %v", ErrBadResponse, method, path, err)
	}
	return nil
}
