// This file proves the install is versioned and safe to repeat: several
// processes installing at once leave one schema at SchemaVersion, a
// second install applies nothing, and the recorded version is what
// Version reads.
package pggate_test

import (
	"context"
	"database/sql"
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
	if _, err := pggate.Script(0, "public"); err == nil {
		t.Fatal("Script(0) gave a script")
	}
}
