// Proves GET /v1/trust-bundle: without a publisher it is 404; with one it
// answers without any credential, the bundle file as published (an edit
// shows at once) with a proof a holder of the previous bundle accepts.
package httpapi

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/grant"
)

func TestTrustBundleEndpoint(t *testing.T) {
	h := newHarness(t)
	if _, err := h.anon.TrustBundle(bg); err == nil {
		t.Fatal("a server without a publisher served a bundle")
	}
	path := filepath.Join(t.TempDir(), BundleFileName)
	f := BundleFor(h.key, "", "")
	if err := os.WriteFile(path, f.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(Config{Registry: h.reg, Auth: Chain{}, Authorizer: AllowAll{}, TrustBundle: FileBundlePublisher(path, h.key)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	anon, _ := httpclient.NewClient(ts.URL)
	first, err := grant.NewBundle(f, "")
	if err != nil {
		t.Fatal(err)
	}
	f.Version = 2
	f.RevokedBelowEpoch = 1
	if err := os.WriteFile(path, f.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := anon.TrustBundle(bg)
	if err != nil {
		t.Fatal(err)
	}
	next, err := first.VerifyUpdate(sb, "")
	if err != nil || next.Version() != 2 {
		t.Fatalf("the published bundle does not verify as the successor: %v", err)
	}
}
