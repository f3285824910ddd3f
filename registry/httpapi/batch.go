package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/fencegate/fencegate/internal/strictjson"
	"github.com/fencegate/fencegate/wire"
)

// POST /v1/batch carries acquire, renew, release and status operations
// in one HTTP exchange (wire.BatchRequest). Each operation runs through
// its own endpoint's call — the same strict decoding of its body, the
// same policy check, registry call, answer type and error code — on a
// goroutine of its own, so a batch's operations reach the store's group
// commit together as concurrent requests do, and one that fails leaves
// the others' answers as they are. What a batch saves is the HTTP
// exchange per operation: the client's and the server's net/http work,
// which the profile in docs/performance.md puts at about 100 µs of CPU
// per exchange, against a registry call of the same order.

// BatchOperationsMax bounds the operations of one batch, 64: the SDK
// sends what its callers issued while a request was in flight, and 64
// is past where a larger group still saves measurable CPU per operation.
const BatchOperationsMax = 64

// BatchRequestBytesMax bounds a batch's body, 256 KiB: 64 status
// operations, the largest (a grant's text each), take about 50 KiB. Each
// operation's own request is still held to RequestBytesMax.
const BatchRequestBytesMax = 256 << 10

// batchOp is an operation a batch may carry.
type batchOp struct {
	e endpoint
	// req stands in for the HTTP request in the endpoint's call: calls
	// read only its URL's path, /v1/batch/<op>, which names the
	// operation in audit and request log lines. Shared, never written.
	req *http.Request
	// call is e.call, or a stricter one (an acquire must not wait).
	call func(ctx context.Context, caller string, r *http.Request, body []byte) (any, error)
}

// batchOps maps each wire.Batch* name to its endpoint.
func (s *Server) batchOps() map[string]batchOp {
	byPath := map[string]endpoint{}
	for _, e := range s.endpoints() {
		byPath[e.path] = e
	}
	ops := map[string]batchOp{}
	for _, name := range []string{wire.BatchAcquire, wire.BatchRenew, wire.BatchRelease, wire.BatchStatus} {
		e := byPath["/v1/"+name]
		op := batchOp{e: e, call: e.call, req: &http.Request{Method: http.MethodPost, URL: &url.URL{Path: "/v1/batch/" + name}}}
		if name == wire.BatchAcquire {
			op.call = s.batchAcquire
		}
		ops[name] = op
	}
	return ops
}

// batchAcquire is an acquire that must not wait: a batch answers when
// its slowest operation does.
func (s *Server) batchAcquire(ctx context.Context, caller string, r *http.Request, body []byte) (any, error) {
	req, err := decode[wire.AcquireRequest](body)
	if err == nil && req.WaitMs != 0 {
		err = fmt.Errorf("%w: batch: an acquire in a batch does not wait (waitMs %d): send it to /v1/acquire", ErrBadRequest, req.WaitMs)
	}
	if err != nil {
		return nil, err
	}
	return s.acquireDecoded(ctx, caller, r.URL.Path, req)
}

// batch runs a batch's operations concurrently and answers each.
func (s *Server) batch(ctx context.Context, caller string, _ *http.Request, body []byte) (any, error) {
	var req wire.BatchRequest
	if err := strictjson.Decode(body, &req); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	n := len(req.Operations)
	switch {
	case n == 0:
		return nil, fmt.Errorf("%w: batch: no operations", ErrBadRequest)
	case n > BatchOperationsMax:
		return nil, fmt.Errorf("%w: batch: %d operations, limit %d", ErrTooLarge, n, BatchOperationsMax)
	}
	answers := make([]batchAnswer, n)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		s.workers.run(func() {
			defer wg.Done()
			answers[i] = s.batchOne(ctx, caller, req.Operations[i])
		})
	}
	answers[0] = s.batchOne(ctx, caller, req.Operations[0])
	wg.Wait()
	return batchResponse{Answers: answers}, nil
}

// batchResponse and batchAnswer are wire.BatchResponse and
// wire.BatchAnswer as the server writes them: each answer is the
// endpoint's own answer value, encoded once with the whole response
// (wire's RawMessage would be encoded apart, then scanned and copied
// again into the response).
type batchResponse struct {
	Answers []batchAnswer `json:"answers"`
}

type batchAnswer struct {
	Status int             `json:"status"`
	Answer any             `json:"answer,omitempty"`
	Error  *wire.ErrorBody `json:"error,omitempty"`
}

// batchOne runs one operation as its endpoint would and records it as
// the endpoint records a call: its verb's outcome counter, the resource
// it was about (Config.Seen) and, with RequestLog, a request line.
func (s *Server) batchOne(ctx context.Context, caller string, o wire.BatchOperation) batchAnswer {
	op, ok := s.ops[o.Op]
	if !ok {
		err := fmt.Errorf("%w: batch: no operation %q (acquire, renew, release, status)", ErrBadRequest, o.Op)
		return batchAnswer{Status: statusFor(wire.CodeBadRequest), Error: new(errorBody(wire.CodeBadRequest, err))}
	}
	start := time.Now()
	rec := &callRecord{caller: caller}
	resp, err := op.call(withRecord(ctx, rec), caller, op.req, o.Request)
	a := batchAnswer{Status: http.StatusOK, Answer: resp}
	code := ""
	if err != nil {
		code = codeOf(err)
		a = batchAnswer{Status: statusFor(code), Error: new(errorBody(code, err))}
	}
	if op.e.count != nil {
		op.e.count(code)
	}
	if s.cfg.Seen != nil && code == "" && rec.resource != "" {
		s.cfg.Seen(rec.resource)
	}
	if s.cfg.RequestLog {
		LogRequest(ctx, s.cfg.Logger, RequestLine{Method: http.MethodPost, Path: op.req.URL.Path, Identity: caller,
			Resource: rec.resource, Outcome: outcomeOf(code), Took: time.Since(start), Fence: rec.fence})
	}
	return a
}
