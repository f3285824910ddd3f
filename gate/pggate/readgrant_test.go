// This file proves the gate inside PostgreSQL refuses a read/write lock
// reader's grant (resource NAME/_read, wire.ReadResource) as every Go
// gate does (gate.Policy.Authenticate): presented for its own resource
// NAME/_read or for the lock's NAME, apply is READ_GRANT (FG015) and
// stores nothing (no receipt, no fence row, no business effect), while
// the writer's grant on NAME is accepted. The negative control is the
// gate without the check (schema version 9's authenticate: the source's
// function with the check cut out): the reader's grant for NAME/_read is
// accepted there.
package pggate_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/wire"
)

// readerCase is a genuine reader's grant and the writer's, on lock name,
// under the fuzz world's HMAC key (which the Go policy trusts too).
func readerCase(fw *fuzzWorld, name string) (reader, writer *gate.Mutation) {
	iss := &gatetest.Issuer{Key: fw.key, Epoch: fuzzEpoch, Now: fuzzT0, StatusValidFor: 10 * time.Second}
	w := gatetest.Writer{Resource: name, Owner: fuzzOwner, Lease: "lease-w", OperationID: "op-a", Fence: 3}
	r := w
	r.Resource, r.Lease = wire.ReadResource(name), "lease-r"
	return iss.Mutation(r, 1, "reader"), iss.Mutation(w, 1, "writer")
}

// storedFor counts what the gate and the business table hold for
// resource: fence rows, receipts, effects.
func storedFor(t *testing.T, db *sql.DB, resource string) [3]int {
	t.Helper()
	var n [3]int
	for i, q := range []string{`SELECT count(*) FROM fencegate.resources WHERE resource = $1`,
		`SELECT count(*) FROM fencegate.receipts WHERE resource = $1`, `SELECT count(*) FROM effects WHERE resource = $1`} {
		if err := db.QueryRow(q, resource).Scan(&n[i]); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

func TestReadGrantRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fw := newFuzzWorld(t)
	now := fuzzT0.Add(time.Second)
	name := "rw/orders"
	reader, writer := readerCase(fw, name)
	forName := *reader
	forName.Resource = name // the envelope names the lock: the grant is still a reader's
	for _, c := range []struct {
		what string
		m    *gate.Mutation
	}{{"for its own resource " + reader.Resource, reader}, {"for the lock's resource " + name, &forName}} {
		if _, err := fw.policy.Authenticate(c.m, fuzzOwner); gate.OutcomeOf(err) != gate.ReadGrant {
			t.Fatalf("the Go gate, a reader's grant %s: %v, want READ_GRANT", c.what, err)
		}
		_, err := fw.run(ctx, fuzzOwner, now, c.m, "reader's write", nil)
		var rej *gate.Rejection
		if !errors.As(err, &rej) || rej.Outcome != gate.ReadGrant || rej.Resource != c.m.Resource || rej.Recorded {
			t.Fatalf("apply, a reader's grant %s: %v, want READ_GRANT", c.what, err)
		}
		if !strings.Contains(rej.Reason, reader.Resource) {
			t.Errorf("the reason %q does not name the reader's resource", rej.Reason)
		}
		// The raw SQLSTATE a client in any language sees.
		env, _ := c.m.MarshalJSON()
		_, err = fw.db.ExecContext(ctx, `SELECT fencegate.apply($1, $2)`, string(env), c.m.PayloadDigest.String())
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "FG015" || pe.Code != pggate.SQLState(gate.ReadGrant) ||
			!strings.HasPrefix(pe.Message, "fencegate: READ_GRANT: ") {
			t.Fatalf("apply, a reader's grant %s: %v, want SQLSTATE FG015", c.what, err)
		}
		if err := pggate.Record(ctx, fw.db, c.m); err != nil {
			t.Fatalf("record, a reader's grant %s: %v", c.what, err)
		}
	}
	for _, r := range []string{reader.Resource, name} {
		if n := storedFor(t, fw.db, r); n != [3]int{} {
			t.Fatalf("after the reader's writes, %s holds %d fence rows, %d receipts, %d effects; want none", r, n[0], n[1], n[2])
		}
	}
	// The writer's grant on the same name opens the gate.
	rc, err := fw.run(ctx, fuzzOwner, now, writer, "writer's write", nil)
	if err != nil || rc.Outcome != gate.Accepted || rc.FenceToken != 3 {
		t.Fatalf("the writer's grant: %+v %v", rc, err)
	}
	if n := storedFor(t, fw.db, name); n != [3]int{1, 1, 1} {
		t.Fatalf("after the writer's write, %s holds %v (fence rows, receipts, effects)", name, n)
	}
}

// withoutReadCheck replaces fencegate.authenticate in db by the
// installed one with the reader's check cut out: schema version 9's.
func withoutReadCheck(t testing.TB, db *sql.DB) {
	t.Helper()
	var def string
	if err := db.QueryRow(`SELECT pg_get_functiondef('fencegate.authenticate(fencegate.envelope_t, text, text[])'::regprocedure)`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	start := strings.Index(def, "  IF octet_length(g.resource) > 6 AND right(g.resource, 6) = '/_read' THEN")
	end := strings.Index(def[max(start, 0):], "  END IF;\n")
	if start < 0 || end < 0 {
		t.Fatalf("no reader's check in authenticate:\n%s", def)
	}
	cut := def[:start] + def[start+end+len("  END IF;\n"):]
	if _, err := db.Exec(cut); err != nil {
		t.Fatal(err)
	}
}

func TestReadGrantCheckCanFail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fw := newFuzzWorld(t)
	withoutReadCheck(t, fw.db)
	now := fuzzT0.Add(time.Second)
	reader, _ := readerCase(fw, "rw/orders")
	rc, err := fw.run(ctx, fuzzOwner, now, reader, "reader's write", nil)
	if err != nil || rc.Outcome != gate.Accepted {
		t.Fatalf("without the check, a reader's grant for its own resource: %+v %v, want ACCEPTED (the control shows nothing)", rc, err)
	}
	if n := storedFor(t, fw.db, reader.Resource); n != [3]int{1, 1, 1} {
		t.Fatalf("without the check, %s holds %v (fence rows, receipts, effects)", reader.Resource, n)
	}
	forName := *reader
	forName.Resource = "rw/orders"
	forName.SegmentSeq = 2
	if _, err := fw.run(ctx, fuzzOwner, now, &forName, "x", nil); gate.OutcomeOf(err) != gate.BindingMismatch {
		t.Fatalf("without the check, a reader's grant for the lock's resource: %v, want BINDING_MISMATCH (as schema 9)", err)
	}
	t.Logf("without the check: the reader's write on %s ACCEPTED (receipt %s)", reader.Resource, rc.ID())
}
