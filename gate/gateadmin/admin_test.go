// Proves the operator's recovery path at a gate, on SQLite and
// PostgreSQL, both through the database (Local, opened from a DSN as the
// CLI does) and through the HTTP endpoint a service mounts: a
// FENCE_REGRESSION-paused resource shows as paused with its alarm; a
// resume whose floor is not above highestFence, or without a note or an
// operator, changes nothing; a resume is recorded with the operator (over
// HTTP, the authenticated identity) and its note; only named admins get
// in; and the tool never creates or migrates a database.
package gateadmin_test

import (
	"context"
	"database/sql"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gateadmin"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/pgtest"
	"github.com/fencegate/fencegate/testkit/redistest"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	redistest.Stop()
	os.Exit(code)
}

const resource = "ledger/paused"

// pausedGate applies fence 5, then a restored registry's fence 3 proven
// HELD a second later: FENCE_REGRESSION, the resource paused at
// highestFence 5. It returns the DSN.
func pausedGate(t *testing.T, postgres bool) string {
	t.Helper()
	ctx := context.Background()
	var dsn string
	var db *sql.DB
	var err error
	d := sqlgate.SQLite
	if postgres {
		dsn, d = pgtest.NewDatabase(t), sqlgate.Postgres
		db, err = sql.Open("pgx", dsn)
	} else {
		dsn = filepath.Join(t.TempDir(), "gate.db")
		db, err = sqlgate.OpenSQLite(dsn, "FULL")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	iss := gatetest.NewIssuer("gateadmin")
	g, err := sqlgate.New(sqlgate.Config{Dialect: d, Policy: gate.Policy{Verifier: iss.Verifier}, Clock: fakeclock.New(gatetest.T0.Add(2 * time.Second))})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	w := func(fence uint64, op string) gatetest.Writer {
		return gatetest.Writer{Resource: resource, Owner: "worker-1", Lease: "l-" + op, OperationID: op, Fence: fence}
	}
	noop := func(context.Context, *sql.Tx) error { return nil }
	if _, err := g.Run(ctx, db, "worker-1", iss.Mutation(w(5, "op-a"), 1, "p"), noop); err != nil {
		t.Fatal(err)
	}
	_, err = g.Run(ctx, db, "worker-1", iss.Later(time.Second).Mutation(w(3, "op-restored"), 1, "p"), noop)
	if !errors.Is(err, gate.ErrFenceRegression) {
		t.Fatalf("fixture: want FENCE_REGRESSION, got %v", err)
	}
	return dsn
}

func eachDB(t *testing.T, f func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, pausedGate(t, false)) })
	t.Run("postgres", func(t *testing.T) { f(t, pausedGate(t, true)) })
}

// resumeContract runs the checks every Admin must pass; operator is who
// the record must name.
func resumeContract(t *testing.T, a gateadmin.Admin, operator string) {
	t.Helper()
	ctx := context.Background()
	st, err := a.Status(ctx, resource)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Paused || st.HighestFence != 5 || len(st.Alarms) != 1 || st.Alarms[0].Kind != "FENCE_REGRESSION" {
		t.Fatalf("status of the paused resource: %+v", st)
	}
	for _, bad := range []struct {
		req  gateadmin.ResumeRequest
		want error
	}{
		{gateadmin.ResumeRequest{Resource: resource, Floor: 5, Note: "floor not raised"}, gate.ErrResumeRefused},
		{gateadmin.ResumeRequest{Resource: resource, Floor: 6}, gateadmin.ErrInvalid},
		{gateadmin.ResumeRequest{Resource: resource, Floor: 6, Note: strings.Repeat("x", gateadmin.NoteBytesMax+1)}, gateadmin.ErrInvalid},
		{gateadmin.ResumeRequest{Resource: "Not/Canonical", Floor: 6, Note: "n"}, gateadmin.ErrInvalid},
	} {
		if _, err := a.Resume(ctx, bad.req); !errors.Is(err, bad.want) {
			t.Errorf("resume %+v: %v, want %v", bad.req, err, bad.want)
		}
	}
	if st, _ := a.Status(ctx, resource); !st.Paused || len(st.Actions) != 0 {
		t.Fatalf("a refused resume changed the resource: %+v", st)
	}
	st, err = a.Resume(ctx, gateadmin.ResumeRequest{Resource: resource, Floor: 6, Note: "INC-7: registry floor raised to 6"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Paused || st.Floor != 6 || len(st.Actions) != 1 {
		t.Fatalf("after resume: %+v", st)
	}
	act := st.Actions[0]
	if act.Action != "resume" || act.Operator != operator || !strings.Contains(act.Detail, "INC-7: registry floor raised to 6") {
		t.Fatalf("resume recorded as %+v, want operator %s and the note", act, operator)
	}
}

func TestLocal(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		l, err := gateadmin.OpenLocal(context.Background(), dsn, "", "")
		if err != nil {
			t.Fatal(err)
		}
		defer l.DB.Close()
		if _, err := l.Resume(context.Background(), gateadmin.ResumeRequest{Resource: resource, Floor: 6, Note: "n"}); !errors.Is(err, gateadmin.ErrInvalid) {
			t.Fatalf("resume without an operator: %v", err)
		}
		l.Operator = "alice"
		resumeContract(t, l, "alice")
	})
}

const (
	tokAdmin  = "admin-token-0123456789"
	tokWorker = "worker-token-0123456789"
)

func TestHandler(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		l, err := gateadmin.OpenLocal(context.Background(), dsn, "", "ignored")
		if err != nil {
			t.Fatal(err)
		}
		defer l.DB.Close()
		auth, err := httpapi.ParseTokenFile([]byte(tokAdmin + " ops-admin\n" + tokWorker + " worker-1\n"))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(gateadmin.Handler(gateadmin.HandlerConfig{Gate: l.Gate, DB: l.DB, Auth: auth, Admins: []string{"ops-admin"}}))
		defer srv.Close()
		ctx := context.Background()
		for tok, code := range map[string]string{"": gateadmin.CodeUnauthenticated, tokWorker: gateadmin.CodeForbidden} {
			_, err := (&gateadmin.Client{Base: srv.URL, Token: tok}).Resume(ctx, gateadmin.ResumeRequest{Resource: resource, Floor: 6, Note: "n"})
			var api *gateadmin.APIError
			if !errors.As(err, &api) || api.Code != code {
				t.Errorf("token %q: %v, want %s", tok, err, code)
			}
		}
		resumeContract(t, &gateadmin.Client{Base: srv.URL, Token: tokAdmin}, "ops-admin")
	})
}

func TestOpenLocalNeverCreatesOrMigrates(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo.db")
	if _, err := gateadmin.OpenLocal(context.Background(), missing, "", "alice"); err == nil {
		t.Fatal("opened a database that does not exist")
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("OpenLocal created the database")
	}
	empty := filepath.Join(dir, "empty.db")
	db, err := sqlgate.OpenSQLite(empty, "FULL")
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := gateadmin.OpenLocal(context.Background(), empty, "", "alice"); !errors.Is(err, gateadmin.ErrNotMigrated) {
		t.Fatalf("a database without the gate's tables: %v, want ErrNotMigrated", err)
	}
}
