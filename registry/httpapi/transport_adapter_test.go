// Tests that httpclient.Client, the SDK's transport, gives callers over
// HTTP the registry's own Go contract: the same wire.Issued values, and
// errors that match the registry's sentinels and codes.
package httpapi

import (
	"bytes"
	"errors"
	"testing"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/wire"
)

func TestTransportSpeaksRegistryErrors(t *testing.T) {
	h := newHarness(t)
	alice, bob := h.alice, h.bob
	req := wire.AcquireRequest{Resource: "inv/t", OperationID: "op", OperationClass: "settle", RequestID: "r-1"}
	is, err := alice.Acquire(bg, req)
	if err != nil || is.Grant.Owner != "alice" {
		t.Fatalf("acquire: %v", err)
	}
	req.RequestID = "r-2"
	_, err = bob.Acquire(bg, req)
	if !errors.Is(err, wire.ErrBusy) || wire.CodeOf(err) != "BUSY" {
		t.Fatalf("busy over HTTP: %v (code %q)", err, wire.CodeOf(err))
	}
	var ae *httpclient.APIError
	if !errors.As(err, &ae) || ae.Status != 409 {
		t.Fatalf("the *APIError is still there: %v", err)
	}
	if err := bob.Release(bg, "inv/t", is.Grant.Lease); !errors.Is(err, wire.ErrNotHolder) {
		t.Fatalf("release by another: %v", err)
	}
	st, err := bob.Status(bg, is.Grant)
	if err != nil || st.Status.Grant != is.Grant.Digest() {
		t.Fatalf("status: %v", err)
	}
	q, err := alice.QueryRequest(bg, "r-1")
	if err != nil || !bytes.Equal(q.Grant.Encode(), is.Grant.Encode()) {
		t.Fatalf("query: %v", err)
	}
	if _, err := h.anon.Renew(bg, "inv/t", is.Grant.Lease); wire.CodeOf(err) != "" || !errors.Is(err, &httpclient.APIError{Code: wire.CodeUnauthenticated}) {
		t.Fatalf("401 must carry no registry code: %v", err)
	}
	h.flaky.down.Store(true)
	if _, err := alice.Renew(bg, "inv/t", is.Grant.Lease); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("store down: %v", err)
	}
}
