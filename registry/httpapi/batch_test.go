// Tests POST /v1/batch against the single endpoints over a real Registry:
// every operation answers exactly as its own endpoint would (status, code,
// busy detail, the grant's bytes); one operation's failure leaves the
// others' answers intact; a waiting acquire, an unknown operation or a
// malformed operation is refused alone; a batch that is not one object of
// the batch's shape, empty or above its limits is refused whole, before
// the registry; and the batch parser never panics (FuzzBatch).
package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/testkit/jsonkeys"
	"github.com/fencegate/fencegate/wire"
)

// batchRaw posts body to /v1/batch as tok and returns the status and the
// decoded answer (a BatchResponse on 200, else an ErrorBody).
func (h *harness) batchRaw(tok, body string) (int, wire.BatchResponse, wire.ErrorBody) {
	h.t.Helper()
	status, b, _ := h.exchange(http.MethodPost, "/v1/batch", tok, "application/json", body)
	var (
		br wire.BatchResponse
		eb wire.ErrorBody
	)
	out := any(&eb)
	if status == http.StatusOK {
		out = &br
	}
	if err := json.Unmarshal(b, out); err != nil {
		h.t.Fatalf("batch: %d body %q: %v", status, b, err)
	}
	return status, br, eb
}

// batchOf builds a batch body from (op, request) pairs; a request that
// is a string goes in as raw JSON.
func batchOf(t *testing.T, ops ...any) string {
	t.Helper()
	var req wire.BatchRequest
	for i := 0; i < len(ops); i += 2 {
		raw, ok := ops[i+1].(string)
		if !ok {
			b, err := json.Marshal(ops[i+1])
			if err != nil {
				t.Fatal(err)
			}
			raw = string(b)
		}
		req.Operations = append(req.Operations, wire.BatchOperation{Op: ops[i].(string), Request: json.RawMessage(raw)})
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBatchAnswersEachOperationAsItsEndpoint(t *testing.T) {
	h := newHarness(t)
	held, err := h.bob.Acquire(bg, acq("inv/held", "b-1"))
	if err != nil {
		t.Fatal(err)
	}
	waiting := acq("inv/w", "a-w")
	waiting.WaitMs = 100
	status, br, _ := h.batchRaw(tokAlice, batchOf(t,
		wire.BatchAcquire, acq("inv/1", "a-1"), // ok
		wire.BatchAcquire, acq("inv/held", "a-2"), // BUSY, with who holds it
		wire.BatchAcquire, acq("alice-only/x", "a-3"), // ok: alice may
		wire.BatchRelease, wire.LeaseRequest{Resource: "inv/held", Lease: held.Grant.Lease}, // NOT_HOLDER
		wire.BatchStatus, wire.StatusRequest{Grant: string(held.Grant.Encode())}, // ok: alice may see inv/*
		wire.BatchAcquire, waiting, // refused alone: a batch does not wait
		wire.BatchAcquire, `{"resource":"inv/2","bogus":1}`, // refused alone: strict decoding
		"lock", acq("inv/3", "a-4"), // refused alone: no such operation
		wire.BatchAcquire, acq("Inv/Bad", "a-5"), // INVALID, as /v1/acquire says
	))
	if status != http.StatusOK {
		t.Fatalf("batch status %d", status)
	}
	want := []struct {
		status int
		code   string
	}{{200, ""}, {409, "BUSY"}, {200, ""}, {403, "NOT_HOLDER"}, {200, ""}, {400, wire.CodeBadRequest}, {400, wire.CodeBadRequest}, {400, wire.CodeBadRequest}, {400, "INVALID"}}
	if len(br.Answers) != len(want) {
		t.Fatalf("%d answers to %d operations", len(br.Answers), len(want))
	}
	for i, w := range want {
		a := br.Answers[i]
		code := ""
		if a.Error != nil {
			code = a.Error.Code
		}
		if a.Status != w.status || code != w.code || (a.Status == 200) != (len(a.Answer) > 0 && a.Error == nil) {
			t.Errorf("answer %d: %d %q (answer %d bytes), want %d %q", i, a.Status, code, len(a.Answer), w.status, w.code)
		}
	}
	if b := br.Answers[1].Error.Busy; b == nil || b.Holder == nil || b.Holder.Owner != "bob" {
		t.Errorf("BUSY in a batch does not say who holds the resource: %+v", b)
	}
	// The grants the batch issued are the ones the single endpoint
	// answers for the same request IDs, byte for byte.
	for i, req := range []wire.AcquireRequest{acq("inv/1", "a-1"), acq("alice-only/x", "a-3")} {
		var batched wire.IssuedResponse
		if err := json.Unmarshal(br.Answers[[]int{0, 2}[i]].Answer, &batched); err != nil {
			t.Fatal(err)
		}
		single, err := h.alice.Acquire(bg, req)
		if err != nil || string(single.Grant.Encode()) != batched.Grant {
			t.Fatalf("%s: single endpoint answers %v / another grant than the batch", req.Resource, err)
		}
	}
	// The policy holds per operation: bob may not touch alice-only/.
	_, br, _ = h.batchRaw(tokBob, batchOf(t, wire.BatchAcquire, acq("alice-only/y", "b-2"), wire.BatchAcquire, acq("inv/4", "b-3")))
	if a := br.Answers[0]; a.Status != 403 || a.Error.Code != wire.CodeForbiddenResource || br.Answers[1].Status != 200 {
		t.Fatalf("bob's batch: %+v %+v", a, br.Answers[1])
	}
}

func TestBatchRefusedWhole(t *testing.T) {
	h := newHarness(t)
	one := batchOf(t, wire.BatchAcquire, acq("inv/1", "r-1"))
	var tooMany []any
	for i := range BatchOperationsMax + 1 {
		tooMany = append(tooMany, wire.BatchAcquire, acq("inv/1", fmt.Sprint("r-", i)))
	}
	calls := h.store.calls.Load()
	for _, c := range []struct {
		name, tok, body string
		status          int
		code            string
	}{
		{"no identity", "", one, 401, wire.CodeUnauthenticated},
		{"no operations", tokAlice, `{"operations":[]}`, 400, wire.CodeBadRequest},
		{"operations missing", tokAlice, `{}`, 400, wire.CodeBadRequest},
		{"unknown field", tokAlice, `{"operations":[],"atomic":true}`, 400, wire.CodeBadRequest},
		{"an operation's unknown field", tokAlice, `{"operations":[{"op":"acquire","request":{},"id":1}]}`, 400, wire.CodeBadRequest},
		{"not an object", tokAlice, `[` + one + `]`, 400, wire.CodeBadRequest},
		{"field twice", tokAlice, `{"operations":[],"operations":[]}`, 400, wire.CodeBadRequest},
		{"too many operations", tokAlice, batchOf(t, tooMany...), 413, wire.CodeTooLarge},
		{"too many bytes", tokAlice, `{"operations":[{"op":"acquire","request":"` + strings.Repeat("x", BatchRequestBytesMax) + `"}]}`, 413, wire.CodeTooLarge},
	} {
		status, _, eb := h.batchRaw(c.tok, c.body)
		if status != c.status || eb.Code != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, status, eb.Code, c.status, c.code)
		}
	}
	if n := h.store.calls.Load() - calls; n != 0 {
		t.Errorf("refused batches reached the store %d times", n)
	}
	if status, _, _ := h.raw(http.MethodGet, "/v1/batch", tokAlice, ""); status != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/batch: %d", status)
	}
}

func TestBatchCountsAndLogsEachOperation(t *testing.T) {
	h := newHarness(t)
	h.batchRaw(tokAlice, batchOf(t, wire.BatchAcquire, acq("inv/m", "r-1"), wire.BatchAcquire, acq("inv/m", "r-2")))
	if ok, busy := value(t, h.metrics.acquires.WithLabelValues("ok")), value(t, h.metrics.acquires.WithLabelValues("BUSY")); ok != 1 || busy != 1 {
		t.Errorf("acquire outcomes ok %v BUSY %v, want 1 and 1", ok, busy)
	}
	var paths []string
	for _, r := range h.logs.records(t, "request") {
		paths = append(paths, fmt.Sprint(r["path"], " ", r["outcome"]))
	}
	got := strings.Join(paths, ", ")
	for _, w := range []string{"/v1/batch/acquire ok", "/v1/batch/acquire BUSY", "/v1/batch ok"} {
		if !strings.Contains(got, w) {
			t.Errorf("request log %q lacks %q", got, w)
		}
	}
}

// FuzzBatch feeds any body to /v1/batch: the server never panics, refuses
// a batch whole only with BAD_REQUEST or TOO_LARGE, and otherwise answers
// every operation, in order, with a status that is its code's.
func FuzzBatch(f *testing.F) {
	f.Add([]byte(`{"operations":[{"op":"acquire","request":{"resource":"inv/1","operationId":"op","operationClass":"settle","requestId":"r-1"}}]}`))
	f.Add([]byte(`{"operations":[{"op":"release","request":{"resource":"inv/1","lease":"l-1"}},{"op":"status","request":{"grant":"x"}}]}`))
	f.Add([]byte(`{"operations":[{"op":"renew","request":null},{"op":"","request":[]}]}`))
	h := newHarness(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/v1/batch", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tokAlice)
		rec := httptest.NewRecorder()
		h.server.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			var eb wire.ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Code != wire.CodeBadRequest && eb.Code != wire.CodeTooLarge {
				t.Fatalf("refused whole with %d %q", rec.Code, rec.Body)
			}
			return
		}
		var in wire.BatchRequest
		var out wire.BatchResponse
		if err := json.Unmarshal(body, &in); err != nil {
			t.Fatalf("accepted a body encoding/json refuses: %v", err)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Answers) != len(in.Operations) {
			t.Fatalf("%d answers to %d operations (%v)", len(out.Answers), len(in.Operations), err)
		}
		for i, a := range out.Answers {
			if (a.Status == 200) != (a.Error == nil) || a.Error != nil && statusFor(a.Error.Code) != a.Status {
				t.Fatalf("answer %d: status %d with error %+v", i, a.Status, a.Error)
			}
		}
	})
}

// The server writes batches with its own types (one encoding pass); their
// JSON fields must be wire's, name for name. Negative control: a renamed
// field fails here before any client could misread it.
func TestBatchAnswerTypesMatchWire(t *testing.T) {
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[batchResponse](), reflect.TypeFor[wire.BatchResponse]()},
		{reflect.TypeFor[batchAnswer](), reflect.TypeFor[wire.BatchAnswer]()},
	} {
		if d := jsonkeys.FieldsDiffer(pair[0], pair[1]); d != "" {
			t.Fatal(d)
		}
	}
}
