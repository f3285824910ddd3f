// This file proves the lock-set calls over HTTP (POST /v1/lockset/
// acquire, renew, release) with raw requests, the shapes api/openapi.yaml
// gives: every member's grant in member order, each verifying and in the
// shape /v1/acquire answers with; BUSY naming the member; a policy that
// refuses one member refuses the set before the store is touched; a
// renewal after one member ended names it; release frees every member;
// the store down is 503 for sets too.
package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// post sends body as JSON to path with tok's identity and decodes a 200
// answer into out; it returns the status and the error body otherwise.
func (h *harness) post(tok, path string, body, out any) (int, wire.ErrorBody) {
	h.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		h.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+path, bytes.NewReader(b))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var eb wire.ErrorBody
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(raw, &eb); err != nil {
			h.t.Fatalf("%s: %d with a body that is no error: %s", path, resp.StatusCode, raw)
		}
		return resp.StatusCode, eb
	}
	if err := json.Unmarshal(raw, out); err != nil {
		h.t.Fatalf("%s: %v: %s", path, err, raw)
	}
	return resp.StatusCode, eb
}

func setRequest(id string, members ...string) wire.LockSetRequest {
	return wire.LockSetRequest{Members: members, OperationID: "op-" + id, OperationClass: "transfer", RequestID: id}
}

func TestLockSetOverHTTP(t *testing.T) {
	h := newHarness(t)
	var got wire.IssuedSetResponse
	if st, eb := h.post(tokAlice, "/v1/lockset/acquire", setRequest("s-1", "alice-only/x", "inv/1", "inv/2"), &got); st != 200 {
		t.Fatalf("acquire: %d %+v", st, eb)
	}
	var leases []wire.LeaseRequest
	for i, m := range got.Members {
		g, err := grant.ParseGrant([]byte(m.Grant))
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"alice-only/x", "inv/1", "inv/2"}[i]; g.Resource != want || g.RequestID != wire.MemberRequestID("s-1", i) || g.Owner != "alice" {
			t.Fatalf("member %d: %+v", i, g)
		}
		if err := h.verifier.Verify(g, m.GrantProof); err != nil {
			t.Fatalf("member %d's proof: %v", i, err)
		}
		leases = append(leases, wire.LeaseRequest{Resource: g.Resource, Lease: g.Lease})
	}
	// bob may lock inv/* but not alice-only/*: his set is refused whole,
	// before the store is touched.
	calls := h.store.calls.Load()
	if st, eb := h.post(tokBob, "/v1/lockset/acquire", setRequest("b-1", "alice-only/y", "inv/3"), nil); st != 403 || eb.Code != wire.CodeForbiddenResource {
		t.Fatalf("bob's set: %d %+v", st, eb)
	}
	if h.store.calls.Load() != calls {
		t.Fatal("a refused set reached the store")
	}
	if st, eb := h.post(tokBob, "/v1/lockset/acquire", setRequest("b-2", "inv/2", "inv/3"), nil); st != 409 || eb.Code != "BUSY" || eb.Busy == nil || eb.Busy.Resource != "inv/2" || eb.Busy.Holder == nil || eb.Busy.Holder.Owner != "alice" {
		t.Fatalf("bob's busy set: %d %+v", st, eb)
	}
	if st, eb := h.post(tokBob, "/v1/lockset/acquire", setRequest("b-3", "inv/3", "inv/2"), nil); st != 400 || eb.Code != "INVALID" || !strings.Contains(eb.Message, "sorted") {
		t.Fatalf("unsorted: %d %+v", st, eb)
	}
	if st, eb := h.post(tokBob, "/v1/lockset/acquire", map[string]any{"members": []string{"inv/3", "inv/4"}, "operationId": "o", "operationClass": "c", "requestId": "r", "extra": 1}, nil); st != 400 || eb.Code != wire.CodeBadRequest {
		t.Fatalf("unknown field: %d %+v", st, eb)
	}
	var renewed wire.IssuedSetResponse
	if st, eb := h.post(tokAlice, "/v1/lockset/renew", wire.LockSetLeasesRequest{Leases: leases}, &renewed); st != 200 || len(renewed.Members) != 3 || renewed.Members[2].Status == "" {
		t.Fatalf("renew: %d %+v %+v", st, eb, renewed)
	}
	// inv/1 released on its own: the set's renewal names it.
	if err := h.alice.Release(bg, leases[1].Resource, leases[1].Lease); err != nil {
		t.Fatal(err)
	}
	if st, eb := h.post(tokAlice, "/v1/lockset/renew", wire.LockSetLeasesRequest{Leases: leases}, nil); st != 403 || eb.Code != "NOT_HOLDER" || !strings.Contains(eb.Message, "inv/1") {
		t.Fatalf("renew with inv/1 released: %d %+v", st, eb)
	}
	var rel wire.LockSetReleaseResponse
	if st, eb := h.post(tokAlice, "/v1/lockset/release", wire.LockSetLeasesRequest{Leases: leases}, &rel); st != 200 || len(rel.Members) != 3 || rel.Members[0].State != grant.StateReleased {
		t.Fatalf("release: %d %+v", st, eb)
	}
	for _, l := range leases {
		if s, err := h.alice.LockStatus(bg, l.Resource); err != nil || s.Holder != nil {
			t.Fatalf("%s after the set's release: %v %+v", l.Resource, err, s.Holder)
		}
	}
	h.flaky.down.Store(true)
	if st, eb := h.post(tokBob, "/v1/lockset/acquire", setRequest("b-4", "inv/3", "inv/4"), nil); st != 503 || eb.Code != "UNAVAILABLE" {
		t.Fatalf("store down: %d %+v", st, eb)
	}
}

// The dashboard hears of every member of a successful set call, each by
// its own name.
func TestLockSetSeenNamesEachMember(t *testing.T) {
	h := newHarness(t)
	tokens, err := ParseTokenFile([]byte(tokenTable))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	srv, err := NewServer(Config{Registry: h.reg, Auth: tokens, Authorizer: AllowAll{}, Seen: func(r string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r)
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	h.srv = ts
	var got wire.IssuedSetResponse
	if st, eb := h.post(tokAlice, "/v1/lockset/acquire", setRequest("s-1", "inv/1", "inv/2"), &got); st != 200 {
		t.Fatalf("acquire: %d %+v", st, eb)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, ",") != "inv/1,inv/2" {
		t.Fatalf("seen %q, want each member", seen)
	}
}
