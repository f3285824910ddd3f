package gateadmin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/fencegate/fencegate/gate"
)

// ResponseBytesMax bounds an answer the Client reads, 1 MiB.
const ResponseBytesMax = 1 << 20

// Client is Admin over a service's Handler. The operator recorded is the
// identity the service authenticates (Token, or HTTP's client
// certificate).
type Client struct {
	// Base is the service's URL, e.g. "https://ledger:8443"; Handler is
	// expected at Base + PathPrefix.
	Base string
	// Token, if set, is sent as "Authorization: Bearer <Token>".
	Token string
	// HTTP is the client (for mTLS, its transport's TLS config carries
	// the client certificate). Optional, defaults to http.DefaultClient.
	HTTP *http.Client
}

var _ Admin = (*Client)(nil)

// APIError is an error answer of the endpoint. It wraps
// gate.ErrResumeRefused for RESUME_REFUSED and ErrInvalid for INVALID.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string { return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, e.Code) }

// Unwrap maps the code back to its sentinel.
func (e *APIError) Unwrap() error {
	switch e.Code {
	case CodeResumeRefused:
		return gate.ErrResumeRefused
	case CodeInvalid:
		return ErrInvalid
	}
	return nil
}

// Status implements Admin.
func (c *Client) Status(ctx context.Context, resource string) (Status, error) {
	var st Status
	err := c.do(ctx, http.MethodGet, "status?resource="+url.QueryEscape(resource), nil, &st)
	return st, err
}

// Resume implements Admin.
func (c *Client) Resume(ctx context.Context, req ResumeRequest) (Status, error) {
	var st Status
	err := c.do(ctx, http.MethodPost, "resume", req, &st)
	return st, err
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Base, "/")+PathPrefix+path, body)
	if err != nil {
		return fmt.Errorf("gateadmin: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	h := c.HTTP
	if h == nil {
		h = http.DefaultClient
	}
	resp, err := h.Do(req)
	if err != nil {
		return fmt.Errorf("gateadmin: %s %s: %w", method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, ResponseBytesMax))
	if err != nil {
		return fmt.Errorf("gateadmin: %s %s: %w", method, req.URL.Path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var eb ErrorBody
		if json.Unmarshal(b, &eb) != nil || eb.Code == "" {
			return &APIError{Status: resp.StatusCode, Code: CodeInternal, Message: strings.TrimSpace(string(b))}
		}
		return &APIError{Status: resp.StatusCode, Code: eb.Code, Message: eb.Message}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("gateadmin: %s %s: bad answer: %w", method, req.URL.Path, err)
	}
	return nil
}
