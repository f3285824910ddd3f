// This file proves the caller-side rules that need no third party: keys
// are stable per segment and differ across segments and fences, a request
// that is not the envelope's payload is refused before anything is
// recorded, and a Caller must declare an allowed use (no mode).
package httpcall_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/downstream/httpcall"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestKeyIsStablePerSegment(t *testing.T) {
	root := grant.OperationRoot("invoice-batch/x", "op-1")
	k := httpcall.Key("invoice-batch/x", 3, root, 1)
	if k != httpcall.Key("invoice-batch/x", 3, root, 1) || len(k) != 68 {
		t.Fatalf("key %q is not stable", k)
	}
	for _, other := range []string{
		httpcall.Key("invoice-batch/x", 4, root, 1),
		httpcall.Key("invoice-batch/x", 3, root, 2),
		httpcall.Key("invoice-batch/y", 3, root, 1),
		httpcall.Key("invoice-batch/x", 3, grant.OperationRoot("invoice-batch/x", "op-2"), 1),
	} {
		if other == k {
			t.Fatal("two segments share a key")
		}
	}
}

func TestCallRefusesAMismatchedRequestAndRecordsNothing(t *testing.T) {
	ctx := context.Background()
	iss := gatetest.NewIssuer("main")
	db, err := sqlgate.OpenSQLite(filepath.Join(t.TempDir(), "local.db"), "NORMAL")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g, err := sqlgate.New(sqlgate.Config{Dialect: sqlgate.SQLite, Policy: gate.Policy{Verifier: iss.Verifier}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := httpcall.New(httpcall.Config{Target: "api", Gate: g, Dialect: sqlgate.SQLite, DB: db}); !errors.Is(err, gate.ErrNoFencedWrite) {
		t.Fatalf("no use declared: %v, want ErrNoFencedWrite", err)
	}
	c, err := httpcall.New(httpcall.Config{Target: "api", Gate: g, Dialect: sqlgate.SQLite, DB: db, Use: gate.UseSingleWriter})
	if err != nil {
		t.Fatal(err)
	}
	if c.Capability() != gate.CapabilityNone {
		t.Fatalf("capability without a query: %s", c.Capability())
	}
	if err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	req := httpcall.Request{Method: "POST", URL: "http://127.0.0.1:1/v1/x", Body: []byte("a")}
	m := iss.Mutation(gatetest.Writer{Resource: "invoice-batch/x", Owner: "w", Lease: "l-1", OperationID: "op-1", Fence: 1}, 1, "not the request")
	if _, err := c.Call(ctx, "w", m, req, nil); !errors.Is(err, httpcall.ErrPayloadDigest) {
		t.Fatalf("mismatched request: %v, want ErrPayloadDigest", err)
	}
	if st, err := g.State(ctx, db, "invoice-batch/x"); err == nil && st.HighestFence != 0 {
		t.Fatalf("state changed: %+v", st)
	}
	if in, err := c.Unresolved(ctx); err != nil || len(in) != 0 {
		t.Fatalf("intents %+v %v, want none", in, err)
	}
	if _, err := c.Resolve(ctx, httpcall.Intent{Key: "k"}); !errors.Is(err, httpcall.ErrNoEffectQuery) {
		t.Fatalf("resolve without a query: %v", err)
	}
}
