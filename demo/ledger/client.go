package ledger

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/fencegate/fencegate/gate"
)

// ResponseBytesMax bounds an answer the Client reads, 1 MiB.
const ResponseBytesMax = 1 << 20

// ErrMutationUnknown: the write may or may not have committed (a timeout,
// a reset connection, a lost ACK, a commit error). Settle it by operation
// ID with client.Resolver and the ledger's receipts; never guess.
var ErrMutationUnknown = errors.New("ledger: MUTATION_UNKNOWN")

// Client calls a ledger Server as one workload identity.
type Client struct {
	// Base is the ledger's URL ("http://127.0.0.1:7421"). Required.
	Base string
	// Token is the bearer token of the caller's identity. Required.
	Token string
	// HTTP is the http.Client. Optional, defaults to http.DefaultClient.
	HTTP *http.Client
	// LoseAnswers, if set, is asked before each write's answer is read; when
	// it says true the answer is thrown away, as a network that drops the
	// ACK would. For demonstrating MUTATION_UNKNOWN only.
	LoseAnswers func(m *gate.Mutation) bool
}

// Write sends entries under envelope m (nil against a lease-only ledger).
// It returns the receipt when the write stands (gate.IsSuccess(err): nil
// for ACCEPTED, a REPLAYED rejection for a retry of a write already
// accepted), a *gate.Rejection for the gate's definite refusals (match with
// errors.Is, e.g. gate.ErrStaleOwner), or an error wrapping
// ErrMutationUnknown when the outcome cannot be known from here.
func (c *Client) Write(ctx context.Context, m *gate.Mutation, entries []Entry) (gate.Receipt, error) {
	body, err := json.Marshal(WriteRequest{Mutation: m, Entries: entries})
	if err != nil {
		return gate.Receipt{}, fmt.Errorf("ledger: encode write: %w", err)
	}
	var wr WriteResponse
	status, err := c.do(ctx, http.MethodPost, "/v1/entries", body, &wr)
	if err == nil && c.LoseAnswers != nil && c.LoseAnswers(m) {
		err = errors.New("the answer was lost on the way back")
	}
	if err != nil {
		return gate.Receipt{}, fmt.Errorf("%w: %w", ErrMutationUnknown, err)
	}
	switch {
	case status == http.StatusOK && wr.Receipt != nil: // decoded strictly, its id checked (gate.DecodeReceipt)
		r := *wr.Receipt
		if wr.Outcome == string(gate.Replayed) {
			return r, &gate.Rejection{Outcome: gate.Replayed, Resource: r.Resource, FenceToken: r.FenceToken, SegmentSeq: r.SegmentSeq, Reason: "exact replay of an accepted segment"}
		}
		return r, nil
	case status == http.StatusOK && m == nil: // lease-only: no receipt
		return gate.Receipt{Outcome: gate.Accepted}, nil
	case status == http.StatusConflict || status == http.StatusBadRequest:
		rej := &gate.Rejection{Outcome: gate.Outcome(wr.Outcome), Reason: wr.Reason, FenceToken: wr.FenceToken, HighestFence: wr.HighestFence}
		if m != nil {
			rej.Resource, rej.SegmentSeq = m.Resource, m.SegmentSeq
		}
		return gate.Receipt{}, rej
	default:
		return gate.Receipt{}, fmt.Errorf("%w: HTTP %d %s: %s", ErrMutationUnknown, status, wr.Outcome, wr.Reason)
	}
}

// QueryOperation asks the ledger whether operationID, attempted under
// fence, happened (the gate's receipt query). It is a
// client.ReceiptQuerierFunc.
func (c *Client) QueryOperation(ctx context.Context, resource, operationID string, fence uint64) (gate.Answer, error) {
	q := url.Values{"resource": {resource}, "operation": {operationID}, "fence": {strconv.FormatUint(fence, 10)}}
	var raw json.RawMessage
	status, err := c.do(ctx, http.MethodGet, "/v1/receipts?"+q.Encode(), nil, &raw)
	if err != nil {
		return gate.Answer{}, err
	}
	if status != http.StatusOK {
		return gate.Answer{}, fmt.Errorf("ledger: receipts: HTTP %d", status)
	}
	a, err := gate.DecodeAnswer(raw)
	if err != nil {
		return gate.Answer{}, fmt.Errorf("ledger: receipts: %v", err) // the ledger's answer, not a gate outcome of ours
	}
	return a, nil
}

// Value reads the current value of key; found is false if none was
// written.
func (c *Client) Value(ctx context.Context, key string) (v Value, found bool, err error) {
	status, err := c.do(ctx, http.MethodGet, "/v1/values?"+url.Values{"key": {key}}.Encode(), nil, &v)
	switch {
	case err != nil:
		return Value{}, false, err
	case status == http.StatusNotFound:
		return Value{Key: key}, false, nil
	case status != http.StatusOK:
		return Value{}, false, fmt.Errorf("ledger: value %q: HTTP %d", key, status)
	}
	return v, true, nil
}

// do makes one call and decodes the JSON answer into out.
func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Base, "/")+path, rd)
	if err != nil {
		return 0, fmt.Errorf("ledger: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	injectTrace(ctx, req.Header) // the worker's trace reaches the gate
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	h := c.HTTP
	if h == nil {
		h = http.DefaultClient
	}
	resp, err := h.Do(req)
	if err != nil {
		return 0, fmt.Errorf("ledger: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, ResponseBytesMax))
	if err != nil {
		return 0, fmt.Errorf("ledger: %s %s: read answer: %w", method, path, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return 0, fmt.Errorf("ledger: %s %s: HTTP %d, undecodable answer: %v", method, path, resp.StatusCode, err) // not a gate outcome of ours: %v
	}
	return resp.StatusCode, nil
}

// injectTrace puts ctx's trace into an outgoing request's headers, on both
// of the worker's hops (the registry's client and the ledger's).
func injectTrace(ctx context.Context, h http.Header) {
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(h))
}
