package httpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/fencegate/fencegate/internal/batch"
	"github.com/fencegate/fencegate/wire"
)

// Coalescing (WithBatching). A call that finds fewer than InflightMax
// requests in flight goes at once, alone, to its own endpoint: an idle
// client sends exactly what it sent without batching, with no added
// latency. Calls that arrive while InflightMax requests are in flight
// queue; the first free slot sends the queue, up to OperationsMax
// operations, as one POST /v1/batch, and each caller gets its own
// operation's answer, decoded and classified exactly as the answer of its
// own endpoint would be. Every per-call guarantee stays the call's: an
// acquire keeps its request ID, so a lost batch answer (a timeout, a
// broken connection) is, for each of its operations, the same lost answer
// a single call can get, retried the same way; a refusal or a registry
// error reaches the one caller whose operation it answers. A batch
// orders nothing: its callers were concurrent.

// BatchOptions tunes WithBatching.
type BatchOptions struct {
	// InflightMax is how many requests (single or batched) the Client
	// has in flight before further calls queue for the next batch.
	// Optional, defaults to InflightMaxDefault (2): with one, every
	// queued call waits for the whole exchange in flight, the slowest of
	// its operations included, and the server's store idles between
	// batches; with two, one batch is answered while the next runs
	// (docs/performance.md). More send smaller batches for no more
	// throughput.
	InflightMax int
	// OperationsMax is how many calls one batch carries. Optional,
	// defaults to 64, the server's limit (httpapi.BatchOperationsMax).
	OperationsMax int
}

// InflightMaxDefault is BatchOptions.InflightMax when unset.
const InflightMaxDefault = 2

// batchOperationsMax is the server's limit on one batch's operations
// (httpapi.BatchOperationsMax, which the SDK does not link).
const batchOperationsMax = 64

// WithBatching coalesces the acquire (without a wait), renew, release
// and status calls this Client's callers make concurrently into POST
// /v1/batch requests, as described above. Against a server without
// /v1/batch (404, an older version) the Client goes back to one request
// per call for good. An acquire with WaitMs > 0 and every other call go
// alone, as without batching. Trace headers (WithHeaders) of a batch are
// its first call's.
func WithBatching(o BatchOptions) ClientOption {
	if o.InflightMax <= 0 {
		o.InflightMax = InflightMaxDefault
	}
	if o.OperationsMax <= 0 || o.OperationsMax > batchOperationsMax {
		o.OperationsMax = batchOperationsMax
	}
	return func(c *Client) { c.batch = newBatcher(c, o) }
}

// batcher coalesces a Client's calls (internal/batch: the slots, the
// queue and the hand-off the etcd store's group commit shares).
type batcher struct {
	c *Client
	q batch.Queue[*batchCall]

	// unsupported: the server answered /v1/batch with 404; every call
	// goes alone from then on.
	unsupported atomic.Bool
}

func newBatcher(c *Client, o BatchOptions) *batcher {
	b := &batcher{c: c}
	b.q = batch.Queue[*batchCall]{InflightMax: o.InflightMax, Send: b.send, Group: func() func(*batchCall) bool {
		n := 0
		return func(*batchCall) bool { n++; return n <= o.OperationsMax }
	}}
	return b
}

// batchCall is one caller's call, queued or in a batch.
type batchCall struct {
	ctx     context.Context
	op      string // a wire.Batch* name
	path    string // its own endpoint
	in, out any
	done    chan struct{} // closed once err is set
	err     error
}

func (c *batchCall) finish(err error) {
	c.err = err
	close(c.done)
}

// post sends in to path, or hands it to the batcher as operation op.
func (c *Client) post(ctx context.Context, op, path string, in, out any) error {
	if c.batch == nil || c.batch.unsupported.Load() {
		return c.do(ctx, http.MethodPost, path, in, out)
	}
	call := &batchCall{ctx: ctx, op: op, path: path, in: in, out: out, done: make(chan struct{})}
	switch sent, err := c.batch.q.Do(ctx, call, call.done); {
	case err == nil:
		return call.err
	case !sent:
		return fmt.Errorf("httpclient: POST %s: not sent: %w", path, err)
	default:
		// Sent: it may have been applied, as a single call cancelled in
		// flight may have been.
		return fmt.Errorf("httpclient: POST %s: %w", path, err)
	}
}

// send sends one call to its own endpoint, several as one batch, and
// delivers every call's outcome.
func (b *batcher) send(group []*batchCall) {
	if len(group) == 1 {
		c := group[0]
		c.finish(b.c.do(c.ctx, http.MethodPost, c.path, c.in, c.out))
		return
	}
	req := batchRequest{Operations: make([]batchOperation, len(group))}
	for i, c := range group {
		req.Operations[i] = batchOperation{Op: c.op, Request: c.in}
	}
	ctxs := make([]context.Context, len(group))
	for i, c := range group {
		ctxs[i] = c.ctx
	}
	ctx, stop := batch.Context(group[0].ctx, ctxs)
	defer stop()
	body, err := b.c.exchange(ctx, http.MethodPost, "/v1/batch", req)
	if ae := (*APIError)(nil); errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		b.unsupported.Store(true)
		b.sendEach(group)
		return
	}
	if err == nil && answersInto(body, group) {
		return
	}
	var resp wire.BatchResponse
	if err == nil {
		if e := json.Unmarshal(body, &resp); e != nil {
			err = fmt.Errorf("%w: POST /v1/batch: %v", ErrBadResponse, e)
		}
	}
	if err == nil && len(resp.Answers) != len(group) {
		err = fmt.Errorf("%w: POST /v1/batch: %d answers to %d operations", ErrBadResponse, len(resp.Answers), len(group))
	}
	for i, c := range group {
		if err != nil {
			c.finish(err) // the whole batch's outcome is each call's: refused, or unknown
			continue
		}
		c.finish(answerOf(resp.Answers[i], c.out))
	}
}

// batchRequest and batchOperation are wire.BatchRequest and
// wire.BatchOperation as the SDK writes them: each operation's request is
// the call's own value, encoded once with the whole batch (wire's
// RawMessage would be encoded apart, then scanned and copied again).
type batchRequest struct {
	Operations []batchOperation `json:"operations"`
}

type batchOperation struct {
	Op      string `json:"op"`
	Request any    `json:"request"`
}

// sendEach sends every call of group alone and concurrently, as they
// would have gone without batching.
func (b *batcher) sendEach(group []*batchCall) {
	var wg sync.WaitGroup
	for _, c := range group {
		wg.Go(func() { c.finish(b.c.do(c.ctx, http.MethodPost, c.path, c.in, c.out)) })
	}
	wg.Wait()
}

// batchResponseInto and batchAnswerInto are wire.BatchResponse and
// wire.BatchAnswer as answersInto decodes them: each Answer holds a **T,
// T the call's out type, whose *T encoding/json allocates and fills only
// where the answer is given and not null.
type batchResponseInto struct {
	Answers []batchAnswerInto `json:"answers"`
}

type batchAnswerInto struct {
	Status int             `json:"status"`
	Answer any             `json:"answer,omitempty"`
	Error  *wire.ErrorBody `json:"error,omitempty"`
}

// answersInto decodes a batch's body once, each answer straight into its
// call's result (the two-step decode, wire.BatchResponse then answerOf,
// reads each answer twice and copies it), finishes every call and
// reports true. Where that decode would not give what the two-step one
// gives — the body not JSON or of the wrong shape, as many answers as
// calls not given, an answer with status 200 absent or null — it touches
// no call's out, finishes none and reports false: the caller then decodes
// the same body in two steps, whose outcome (and error text) stands.
// Each call's out points to a zero value (its caller's fresh variable),
// so the answer decoded apart and copied in equals one decoded into it.
func answersInto(body []byte, group []*batchCall) bool {
	// The slots are prepared past the slice's length, within its
	// capacity: encoding/json decodes the i-th answer into the i-th slot
	// (it extends a slice within its capacity without clearing), and a
	// body without "answers" leaves the length 0. Were a slot cleared, its
	// Answer would decode as a map and the check below decline.
	slots := make([]batchAnswerInto, len(group))
	for i, c := range group {
		slots[i].Answer = reflect.New(reflect.TypeOf(c.out)).Interface()
	}
	resp := batchResponseInto{Answers: slots[:0]}
	if json.Unmarshal(body, &resp) != nil || len(resp.Answers) != len(group) {
		return false
	}
	for _, a := range resp.Answers {
		if a.Status != http.StatusOK {
			continue
		}
		if p := reflect.ValueOf(a.Answer); p.Kind() != reflect.Pointer || p.IsNil() || p.Elem().IsNil() {
			return false
		}
	}
	for i, c := range group {
		a := resp.Answers[i]
		if a.Status != http.StatusOK {
			c.finish(answerOf(wire.BatchAnswer{Status: a.Status, Error: a.Error}, c.out))
			continue
		}
		reflect.ValueOf(c.out).Elem().Set(reflect.ValueOf(a.Answer).Elem().Elem())
		c.finish(nil)
	}
	return true
}

// answerOf decodes one operation's answer into out, or returns its error
// as the operation's own endpoint's error response would come back.
func answerOf(a wire.BatchAnswer, out any) error {
	if a.Status == http.StatusOK {
		if err := json.Unmarshal(a.Answer, out); err != nil {
			return fmt.Errorf("%w: POST /v1/batch: an answer: %v", ErrBadResponse, err)
		}
		return nil
	}
	if a.Error == nil {
		return apiError(a.Status, wire.ErrorBody{}, "httpclient: batch answer without an error body")
	}
	return apiError(a.Status, *a.Error, "")
}
