//go:build unix

// Proves the frozen-leader story with client-go's own LeaderElector in
// two processes on a real `serve --dev` and real PostgreSQL: leader A
// makes its write and is frozen (SIGSTOP) with it past its lease;
// candidate B's elector takes the election at a higher term and writes
// through the gate; A is thawed and its write reaches the database: the
// gate refuses it (STALE_OWNER) and B's row stands, and A's next write is
// refused before it leaves A (its term is over) while its elector stops
// leading. The negative control plays the same story with A and B
// writing straight to the table after checking that they lead, as a
// Kubernetes Lease alone allows: A's late write lands over B's.
package fencedlock

import (
	"database/sql"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/fencegate/fencegate/integrations/kubernetes/internal/proctest"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

var (
	leadingLine = regexp.MustCompile(`leading term=(\d+)`)
	pausedLine  = regexp.MustCompile(`paused term=(\d+)`)
	outcomeLine = regexp.MustCompile(`outcome (\S+)`)
	stoppedLine = regexp.MustCompile(`stopped leading at=(\d+)`)
)

func TestFrozenLeaderIsFenced(t *testing.T) {
	t.Parallel()
	_, url := serveDev(t)
	for _, gated := range []bool{true, false} {
		t.Run(map[bool]string{true: "gated", false: "lease-only"}[gated], func(t *testing.T) {
			t.Parallel()
			frozenLeader(t, url, gated)
		})
	}
}

func frozenLeader(t *testing.T, registry string, gated bool) {
	dsn := pgtest.NewDatabase(t)
	db := openReport(t, dsn)
	resource := "election/report-" + strconv.FormatBool(gated)
	elector := func(id string) *proctest.Proc {
		return proctest.Start(t, []string{envElector + "=1", "FG_REGISTRY=" + registry, "FG_RESOURCE=" + resource,
			"FG_IDENTITY=" + id, "FG_DSN=" + dsn, "FG_GATED=" + map[bool]string{true: "1", false: "0"}[gated]}, testBinary(t))
	}
	a := elector("a")
	aTerm := term(t, a.Wait(t, leadingLine))
	a.Send(t, "pause-write by A")
	a.Wait(t, pausedLine)
	a.Signal(t, syscall.SIGSTOP)
	frozen := time.Now()

	b := elector("b")
	if bTerm := term(t, b.Wait(t, leadingLine)); bTerm <= aTerm {
		t.Fatalf("B leads at term %d, not above A's %d", bTerm, aTerm)
	}
	if lease := storyTimings.LeaseDuration; time.Since(frozen) < lease {
		t.Fatalf("B led %s after A froze, within A's %s lease", time.Since(frozen), lease)
	}
	b.Send(t, "write by B")
	want := map[bool]string{true: "ACCEPTED", false: "WRITTEN"}[gated]
	if got := b.Wait(t, outcomeLine)[1]; got != want {
		t.Fatalf("B's write: %s, want %s", got, want)
	}

	a.Send(t, "go") // A's write goes on the moment it wakes
	a.Signal(t, syscall.SIGCONT)
	got := a.Wait(t, outcomeLine)[1]
	row := value(t, db)
	if !gated {
		if got != "WRITTEN" || row != "by A" {
			t.Fatalf("without the gate A's late write was %s and the row holds %q: the story does not show what the gate prevents", got, row)
		}
		return
	}
	if got != "STALE_OWNER" || row != "by B" {
		t.Fatalf("the thawed leader's write: %s, the row holds %q; want STALE_OWNER and B's row", got, row)
	}
	a.Wait(t, stoppedLine)
	a.Send(t, "write by A, again")
	if got := a.WaitAll(t, outcomeLine, 2)[1][1]; got != "NOT_LEADING" {
		t.Fatalf("the thawed leader's next write: %s, want NOT_LEADING (its term is over)", got)
	}
	if row := value(t, db); row != "by B" {
		t.Fatalf("the row holds %q, want B's", row)
	}
}

// openReport makes the stories' table, one row, in the database dsn
// names; the pool closes when the test ends.
func openReport(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Exec(`CREATE TABLE report (id int PRIMARY KEY, value text NOT NULL, term bigint NOT NULL);
		INSERT INTO report VALUES (1, 'nobody', 0)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func term(t *testing.T, m []string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func value(t *testing.T, db *sql.DB) string {
	t.Helper()
	var v string
	if err := db.QueryRow(`SELECT value FROM report WHERE id = 1`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
