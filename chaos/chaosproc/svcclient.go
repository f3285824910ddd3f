package chaosproc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fencegate/fencegate/chaos/record"
	"github.com/fencegate/fencegate/gate"
)

// serviceCallTimeout bounds one call to a resource service: past it the
// write is MUTATION_UNKNOWN.
const serviceCallTimeout = 1500 * time.Millisecond

// ServiceClient calls one resource service replica as a workload identity.
type ServiceClient struct {
	Base  string // "http://127.0.0.1:port", the link's proxy
	Token string
	HTTP  *http.Client
}

// Write sends one segment. The error is non-nil when the outcome cannot
// be known (no answer, a 5xx): the write is MUTATION_UNKNOWN.
func (c *ServiceClient) Write(ctx context.Context, m *gate.Mutation, payload string) (WriteResponse, error) {
	body, err := json.Marshal(WriteRequest{Mutation: *m, Payload: payload})
	if err != nil {
		return WriteResponse{}, err
	}
	var out WriteResponse
	status, err := c.do(ctx, http.MethodPost, "/v1/write", body, &out)
	switch {
	case err != nil:
		return WriteResponse{}, err
	case status >= 500 || out.Outcome == record.ResultUnknown:
		return out, fmt.Errorf("chaosproc: write: HTTP %d %s: %s", status, out.Outcome, out.Reason)
	}
	return out, nil
}

// QueryOperation asks the service's receipts whether the operation
// happened (a client.ReceiptQuerierFunc).
func (c *ServiceClient) QueryOperation(ctx context.Context, resource, operationID string, fence uint64) (gate.Answer, error) {
	q := url.Values{"resource": {resource}, "operation": {operationID}, "fence": {strconv.FormatUint(fence, 10)}}
	var raw json.RawMessage
	status, err := c.do(ctx, http.MethodGet, "/v1/receipts?"+q.Encode(), nil, &raw)
	if err != nil {
		return gate.Answer{}, err
	}
	if status != http.StatusOK {
		return gate.Answer{}, fmt.Errorf("chaosproc: receipts: HTTP %d", status)
	}
	a, err := gate.DecodeAnswer(raw)
	if err != nil { // the service's answer, not a gate outcome of the worker's: %v
		return gate.Answer{}, fmt.Errorf("chaosproc: receipts: %v", err)
	}
	return a, nil
}

func (c *ServiceClient) do(ctx context.Context, method, path string, body []byte, out any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, serviceCallTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Base, "/")+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	h := c.HTTP
	if h == nil {
		h = http.DefaultClient
	}
	resp, err := h.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return resp.StatusCode, fmt.Errorf("chaosproc: %s %s: HTTP %d: %w", method, path, resp.StatusCode, err)
	}
	return resp.StatusCode, nil
}
