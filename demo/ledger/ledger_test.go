// Proves the ledger example does what its doc says, against a real
// registry over HTTP and the gate on SQLite and PostgreSQL: a segmented
// batch lands in order with one receipt per segment and the receipt query
// finds them; a lost ACK is settled by operation ID (MUTATION_UNKNOWN);
// another identity, a payload that is not the digest, and a direct write
// to the protected table are all refused; an acquire that queued longer
// than its TTL still writes.
package ledger_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/demo/ledger"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/testkit/pgtest"
	"github.com/fencegate/fencegate/wire"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const (
	tokA = "ledger-test-token-a-0123456789"
	tokB = "ledger-test-token-b-0123456789"
)

// world is a registry and a ledger, both over HTTP.
type world struct {
	registry, ledger string
	db               *sql.DB
}

func newWorld(t *testing.T, postgres bool) *world {
	t.Helper()
	ctx := context.Background()
	key, err := grant.GenerateKey(grant.AlgEd25519, "ledger-test", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := grant.NewBundle(httpapi.BundleFor(key, "", ""), "")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(memstore.New(), registry.DefaultConfig(1), clock.System{}, key)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := httpapi.ParseTokenFile([]byte(tokA + " worker-a\n" + tokB + " worker-b\n"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := httpapi.NewServer(httpapi.Config{Registry: reg, Auth: tokens, Authorizer: httpapi.AllowAll{}})
	if err != nil {
		t.Fatal(err)
	}
	rsrv := httptest.NewServer(rs)
	t.Cleanup(rsrv.Close)

	dsn := filepath.Join(t.TempDir(), "ledger.db")
	if postgres {
		dsn = pgtest.NewDatabase(t)
	}
	db, pg, err := ledger.OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ls, err := ledger.NewServer(ctx, ledger.Config{DB: db, Postgres: pg, Verifier: grant.NewVerifier(bundle, 0), Auth: tokens})
	if err != nil {
		t.Fatal(err)
	}
	lsrv := httptest.NewServer(ls)
	t.Cleanup(lsrv.Close)
	return &world{registry: rsrv.URL, ledger: lsrv.URL, db: db}
}

func (w *world) transport(t *testing.T, tok string) *httpclient.Client {
	c, err := httpclient.NewClient(w.registry, httpclient.WithBearerToken(tok))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func entries(n int) []ledger.Entry {
	var es []ledger.Entry
	for i := range n {
		es = append(es, ledger.Entry{Key: "batch/row-" + string(rune('a'+i)), Value: "settled"})
	}
	return es
}

// eachDB runs f on SQLite, and on PostgreSQL when one is available.
func eachDB(t *testing.T, f func(t *testing.T, w *world)) {
	t.Run("sqlite", func(t *testing.T) { f(t, newWorld(t, false)) })
	t.Run("postgres", func(t *testing.T) { f(t, newWorld(t, true)) })
}

func TestSegmentedBatchAndReceiptQuery(t *testing.T) {
	eachDB(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		lc := &ledger.Client{Base: w.ledger, Token: tokA}
		res, err := ledger.RunWorker(ctx, ledger.WorkerConfig{Name: "A", Registry: w.transport(t, tokA), Ledger: lc,
			Resource: "invoice-batch/2026-07-19", OperationID: "settle-1", Entries: entries(5), Segments: 3, TTL: 10 * time.Second})
		if err != nil || !res.Written {
			t.Fatalf("worker: %+v, %v", res, err)
		}
		ans, err := lc.QueryOperation(ctx, "invoice-batch/2026-07-19", "settle-1", res.Fence)
		if err != nil {
			t.Fatal(err)
		}
		if ans.Verdict != gate.VerdictAccepted || len(ans.Receipts) != 3 {
			t.Fatalf("receipt query: %s with %d receipts, want ACCEPTED with 3", ans.Verdict, len(ans.Receipts))
		}
		for i, r := range ans.Receipts {
			if r.SegmentSeq != uint64(i+1) || r.FenceToken != res.Fence || r.ID() != res.Receipts[i].ID() {
				t.Errorf("receipt %d: segment %d fence %d id %s; worker saw %s", i, r.SegmentSeq, r.FenceToken, r.ID(), res.Receipts[i].ID())
			}
		}
		v, found, err := lc.Value(ctx, "batch/row-e")
		if err != nil || !found || v.Writer != "worker-a" || v.Fence != res.Fence {
			t.Fatalf("last row: %+v found=%t err=%v", v, found, err)
		}
	})
}

func TestLostAckSettledByOperationID(t *testing.T) {
	w := newWorld(t, false)
	ctx := context.Background()
	lost := 0
	lc := &ledger.Client{Base: w.ledger, Token: tokA, LoseAnswers: func(m *gate.Mutation) bool {
		if m.SegmentSeq == 2 && lost == 0 {
			lost++
			return true // segment 2 commits, but its ACK never arrives
		}
		return false
	}}
	var kinds []string
	res, err := ledger.RunWorker(ctx, ledger.WorkerConfig{Name: "A", Registry: w.transport(t, tokA), Ledger: lc,
		Resource: "invoice-batch/2026-07-20", OperationID: "settle-2", Entries: entries(3), Segments: 3, TTL: 10 * time.Second,
		Emit: func(e ledger.Event) { kinds = append(kinds, e.Kind+":"+e.Outcome) }})
	if err != nil || !res.Written || len(res.Receipts) != 3 {
		t.Fatalf("worker: %+v, %v (events %v)", res, err, kinds)
	}
	want := map[string]bool{"unknown:": false, "resolved:ACCEPTED": false}
	for _, k := range kinds {
		if _, ok := want[k]; ok {
			want[k] = true
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("no %s event in %v", k, kinds)
		}
	}
}

func TestRefusals(t *testing.T) {
	w := newWorld(t, false)
	ctx := context.Background()
	s := client.NewSession(w.transport(t, tokA), client.Options{})
	l, err := s.Acquire(ctx, wire.AcquireRequest{Resource: "invoice-batch/2026-07-21", OperationID: "settle-3", OperationClass: "settle", TTLMs: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	es := entries(1)
	m, err := l.Envelope(1, ledger.PayloadDigest(es))
	if err != nil {
		t.Fatal(err)
	}
	asB := &ledger.Client{Base: w.ledger, Token: tokB}
	if _, err := asB.Write(ctx, &m, es); !errors.Is(err, gate.ErrIdentityMismatch) {
		t.Errorf("A's envelope sent by worker-b: %v, want IDENTITY_MISMATCH", err)
	}
	asA := &ledger.Client{Base: w.ledger, Token: tokA}
	if _, err := asA.Write(ctx, &m, entries(2)); !errors.Is(err, gate.ErrMalformed) {
		t.Errorf("entries that are not the digest: %v, want MALFORMED", err)
	}
	if _, err := w.db.ExecContext(ctx, `INSERT INTO `+ledger.Table+` (resource, key, value, writer, fence, written) VALUES ('r', 'x', 'y', 'z', 0, 1)`); err == nil {
		t.Error("a direct write to the protected table succeeded")
	}
	if _, err := asA.Write(ctx, &m, es); err != nil {
		t.Errorf("the genuine write: %v", err)
	}
	if _, err := asA.Write(ctx, &m, es); !errors.Is(err, gate.ErrReplayed) || !gate.IsSuccess(err) {
		t.Errorf("the same write again: %v, want REPLAYED", err)
	}
}

// An acquire that queues longer than its own TTL returns a lease the
// client already counts as past its deadline; the worker waits for the
// registry to confirm it instead of failing its first envelope.
func TestQueuedLongerThanTTL(t *testing.T) {
	w := newWorld(t, false)
	ctx := context.Background()
	gone := client.NewSession(w.transport(t, tokA), client.Options{Manual: true}) // never renews: its lease just expires
	if _, err := gone.Acquire(ctx, wire.AcquireRequest{Resource: "invoice-batch/2026-07-22", OperationID: "settle-4", OperationClass: "settle", TTLMs: 2000}); err != nil {
		t.Fatal(err)
	}
	res, err := ledger.RunWorker(ctx, ledger.WorkerConfig{Name: "B", Registry: w.transport(t, tokB), Ledger: &ledger.Client{Base: w.ledger, Token: tokB},
		Resource: "invoice-batch/2026-07-22", OperationID: "settle-5", Entries: entries(1), TTL: 2 * time.Second, Wait: 10 * time.Second})
	if err != nil || !res.Written || res.Fence != 2 {
		t.Fatalf("B after queueing ~3s for a 2s lease: %+v, %v", res, err)
	}
}
