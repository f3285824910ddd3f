// This file proves that Client is the gate's production StatusQuerier: the
// answer follows the registry (HELD, then RELEASED) and a statement whose
// proof the gate's bundle does not verify is an error, never an answer.
package httpapi

import (
	"crypto/rand"
	"errors"
	"testing"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

var _ gate.StatusQuerier = (*httpclient.Client)(nil)

func TestClientQueryStatus(t *testing.T) {
	h := newHarness(t)
	a, err := h.alice.Acquire(bg, acq("inv/q", "r-q"))
	if err != nil {
		t.Fatal(err)
	}
	state, epoch, err := h.bob.QueryStatus(bg, a.Grant)
	if err != nil || state != grant.StateHeld || epoch != 1 {
		t.Fatalf("held: %s %d %v", state, epoch, err)
	}
	if err := h.alice.Release(bg, "inv/q", a.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	if state, _, err = h.bob.QueryStatus(bg, a.Grant); err != nil || state != grant.StateReleased {
		t.Fatalf("released: %s %v", state, err)
	}

	other, err := grant.GenerateKey(grant.AlgEd25519, "other-key", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := grant.NewBundle(BundleFor(other, "", ""), "")
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := httpclient.NewClient(h.srv.URL, httpclient.WithHTTPClient(h.srv.Client()), httpclient.WithBearerToken(tokBob), httpclient.WithVerifier(grant.NewVerifier(b, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := stranger.QueryStatus(bg, a.Grant); !errors.Is(err, httpclient.ErrBadResponse) {
		t.Fatalf("an answer the gate's bundle cannot verify must fail: %v", err)
	}
}
