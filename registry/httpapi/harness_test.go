// This file proves nothing on its own: it builds a real Registry behind a
// real Server on an httptest server, with a fake clock, a counting store
// and one client per identity.
package httpapi

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
)

// countingStore counts calls, to show a refused request never reached it.
type countingStore struct {
	registry.Store
	calls atomic.Int64
}

func (s *countingStore) Read(ctx context.Context, res string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	s.calls.Add(1)
	return s.Store.Read(ctx, res, keys)
}

func (s *countingStore) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	s.calls.Add(1)
	return s.Store.Commit(ctx, w)
}

// harnessPolicy lets the tests' workers (and the admin, who acquires in
// some) lock and see every "inv/..." resource, and alice alone
// "alice-only/...".
const harnessPolicy = `{"schema": "resourcePolicy.v1", "rules": [
  {"note": "the tests' workers", "identities": ["alice", "bob", "spiffe://example.org/*"], "resources": ["inv/*"], "verbs": ["acquire", "see"]},
  {"identities": ["alice"], "resources": ["alice-only/*"], "verbs": ["acquire", "see"]}]}`

const (
	tokBob     = "bob-token-0123456789ab"
	adminID    = "spiffe://example.org/ops/admin"
	tokenTable = tokAlice + " alice\n" + tokBob + " bob\n" + tokAdmin + " " + adminID + "\n"
)

type harness struct {
	t          testing.TB
	srv        *httptest.Server
	store      *countingStore
	flaky      *flakyStore
	reg        *registry.Registry
	server     *Server
	metrics    *Metrics
	clock      *fakeclock.Clock
	key        *grant.SigningKey
	verifier   *grant.Verifier
	alice      *httpclient.Client
	bob        *httpclient.Client
	admin      *httpclient.Client
	anon       *httpclient.Client
	logs       *lockedBuffer // the server's slog output (JSON lines)
	policy     *PolicyFile   // harnessPolicy, in policyPath
	policyPath string
}

func newHarness(t testing.TB) *harness { return newHarnessWith(t, nil) }

// newHarnessWith lets a test change the registry's config (epoch 1).
func newHarnessWith(t testing.TB, tune func(*registry.Config)) *harness {
	t.Helper()
	h := &harness{t: t, clock: fakeclock.New(time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC))}
	key, err := grant.GenerateKey(grant.AlgEd25519, "test-key", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h.key = key
	bundle, err := grant.NewBundle(BundleFor(key, "", ""), "")
	if err != nil {
		t.Fatal(err)
	}
	h.verifier = grant.NewVerifier(bundle, 0)
	h.flaky = newTestStore(t)
	h.store = &countingStore{Store: h.flaky}
	cfg := registry.DefaultConfig(1)
	if tune != nil {
		tune(&cfg)
	}
	h.metrics = NewMetrics()
	h.reg, err = registry.New(InstrumentStore(h.store, h.metrics), cfg, h.clock, key)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := ParseTokenFile([]byte(tokenTable))
	if err != nil {
		t.Fatal(err)
	}
	h.policyPath = filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(h.policyPath, []byte(harnessPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	if h.policy, err = LoadPolicyFile(h.policyPath); err != nil {
		t.Fatal(err)
	}
	h.logs = &lockedBuffer{}
	h.server, err = NewServer(Config{Registry: h.reg, Store: h.store, Auth: Chain{CertAuth{}, tokens}, Admins: Admins{adminID}, Authorizer: h.policy, Metrics: h.metrics, RequestLog: true,
		Logger: slog.New(slog.NewJSONHandler(h.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(h.server)
	t.Cleanup(h.srv.Close)
	h.alice = h.client(tokAlice)
	h.bob = h.client(tokBob)
	h.admin = h.client(tokAdmin)
	h.anon = h.client("")
	return h
}

func (h *harness) client(tok string) *httpclient.Client {
	opts := []httpclient.ClientOption{httpclient.WithHTTPClient(h.srv.Client()), httpclient.WithVerifier(h.verifier)}
	if tok != "" {
		opts = append(opts, httpclient.WithBearerToken(tok))
	}
	c, err := httpclient.NewClient(h.srv.URL, opts...)
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}
