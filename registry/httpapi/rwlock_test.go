// This file proves the read/write lock over HTTP with raw requests, the
// shapes api/openapi.yaml gives: /v1/acquire with mode "read" answers a
// grant on NAME/_read carrying the last writer's fence; readers share; a
// writer is BUSY beside them; POST /v1/downgrade keeps the fence and
// holds a second reader back while the write lease's statements may be
// fresh; a reader renews and releases under NAME/_read (authorized as
// NAME); an unknown mode and the reserved name are INVALID.
package httpapi

import (
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

func rwRequest(id, mode string) wire.AcquireRequest {
	return wire.AcquireRequest{Resource: "inv/rw", OperationID: "op-" + id, OperationClass: "settle", RequestID: id, TTLMs: 10_000, Mode: mode}
}

func parsed(t *testing.T, r wire.IssuedResponse) *grant.Grant {
	t.Helper()
	g, err := grant.ParseGrant([]byte(r.Grant))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestReadWriteLockOverHTTP(t *testing.T) {
	h := newHarness(t)
	var w wire.IssuedResponse
	if st, eb := h.post(tokAlice, "/v1/acquire", rwRequest("w-1", ""), &w); st != 200 {
		t.Fatalf("write acquire: %d %+v", st, eb)
	}
	wg := parsed(t, w)
	if st, eb := h.post(tokBob, "/v1/acquire", rwRequest("r-1", wire.ModeRead), nil); st != 409 || eb.Code != "BUSY" {
		t.Fatalf("reader beside a writer: %d %+v", st, eb)
	}
	var d wire.IssuedResponse
	if st, eb := h.post(tokAlice, "/v1/downgrade", wire.DowngradeRequest{Resource: "inv/rw", Lease: wg.Lease, RequestID: "w-1-read"}, &d); st != 200 {
		t.Fatalf("downgrade: %d %+v", st, eb)
	}
	dg := parsed(t, d)
	if dg.Resource != "inv/rw/_read" || dg.FenceToken != wg.FenceToken || dg.Owner != "alice" {
		t.Fatalf("downgraded grant: %+v", dg)
	}
	if err := h.verifier.Verify(dg, d.GrantProof); err != nil {
		t.Fatalf("downgraded grant's proof: %v", err)
	}
	// The write lease's statements may still be fresh: no other reader yet.
	if st, eb := h.post(tokBob, "/v1/acquire", rwRequest("r-2", wire.ModeRead), nil); st != 409 || eb.Code != "BUSY" {
		t.Fatalf("a reader right after a downgrade: %d %+v", st, eb)
	}
	if st, eb := h.post(tokBob, "/v1/acquire", rwRequest("x-1", ""), nil); st != 409 || eb.Code != "BUSY" {
		t.Fatalf("a writer beside the downgraded reader: %d %+v", st, eb)
	}
	var rn wire.IssuedResponse
	if st, eb := h.post(tokAlice, "/v1/renew", wire.LeaseRequest{Resource: dg.Resource, Lease: dg.Lease}, &rn); st != 200 || rn.Status == "" {
		t.Fatalf("renew the reader: %d %+v", st, eb)
	}
	if st, eb := h.post(tokAlice, "/v1/release", wire.LeaseRequest{Resource: dg.Resource, Lease: dg.Lease}, &wire.ReleaseResponse{}); st != 200 {
		t.Fatalf("release the reader: %d %+v", st, eb)
	}
	for name, body := range map[string]any{
		"unknown mode":      rwRequest("b-1", "write"),
		"reserved name":     wire.AcquireRequest{Resource: "inv/rw/_read", OperationID: "o", OperationClass: "settle", RequestID: "b-2"},
		"read of semaphore": wire.AcquireRequest{Resource: "inv/sem", OperationID: "o", OperationClass: "settle", RequestID: "b-3", Permits: 2, Mode: wire.ModeRead},
	} {
		if st, eb := h.post(tokBob, "/v1/acquire", body, nil); st != 400 || eb.Code != "INVALID" {
			t.Errorf("%s: %d %+v", name, st, eb)
		}
	}
}
