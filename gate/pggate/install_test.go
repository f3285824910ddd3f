// This file proves the install is versioned and safe to repeat: several
// processes installing at once leave one schema at SchemaVersion, a
// second install applies nothing, and the recorded version is what
// Version reads, every version listed and no other recorded.
package pggate_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

func TestInstallConcurrentAndRepeated(t *testing.T) {
	db, err := sql.Open("pgx", pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if v, err := pggate.Version(ctx, db); err != nil || v != 0 {
		t.Fatalf("fresh database: version %d, %v", v, err)
	}
	var wg sync.WaitGroup
	results := make([]pggate.Installed, 3)
	errs := make([]error, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = pggate.Install(ctx, db)
		}()
	}
	wg.Wait()
	fresh := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("install %d: %v", i, err)
		}
		if results[i].From == 0 {
			fresh++
		}
		if results[i].To != pggate.SchemaVersion() || results[i].CryptoSchema != "fencegate" {
			t.Fatalf("install %d: %+v", i, results[i])
		}
	}
	if fresh != 1 {
		t.Fatalf("%d of 3 concurrent installs applied version 1: %+v", fresh, results)
	}
	again, err := pggate.Install(ctx, db)
	if err != nil || again.From != pggate.SchemaVersion() {
		t.Fatalf("second install: %+v %v", again, err)
	}
	if v, err := pggate.Version(ctx, db); err != nil || v != pggate.SchemaVersion() {
		t.Fatalf("version %d, %v", v, err)
	}
	if _, err := pggate.Migration(0); err == nil {
		t.Fatal("Migration(0) gave a script")
	}
	var recorded []int
	rows, err := db.QueryContext(ctx, `SELECT version FROM fencegate.schema_version ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		recorded = append(recorded, v)
	}
	if fmt.Sprint(recorded) != fmt.Sprint(pggate.Versions()) {
		t.Fatalf("recorded versions %v, want %v: a number never used must not be recorded", recorded, pggate.Versions())
	}
}

// TestVersionsSkipNumbersNeverUsed: a version number left free for work
// begun elsewhere has no migration and is not applied.
func TestVersionsSkipNumbersNeverUsed(t *testing.T) {
	vs := pggate.Versions()
	if len(vs) == 0 || vs[0] != 1 || vs[len(vs)-1] != pggate.SchemaVersion() {
		t.Fatalf("versions %v, schema version %d", vs, pggate.SchemaVersion())
	}
	for v := 1; v <= pggate.SchemaVersion(); v++ {
		_, err := pggate.Migration(v)
		if (err == nil) != slices.Contains(vs, v) {
			t.Fatalf("version %d: script error %v, listed %v", v, err, vs)
		}
	}
}
