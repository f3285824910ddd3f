// This file proves fencegate gate enroll refuses a key ID the database
// has seen, at the database (issue 43): gk-1 retired, then made active
// again (KEY_STATE_BACK); gk-1's row removed, then enrolled again active
// with another secret (KEY_OTHER_SECRET); each refused with a non-zero
// exit naming the code, and the registry's gate-keys file, written only
// after the database, left as it was. Negative control: on a database
// whose key-history trigger is dropped, the same enrolment succeeds and
// the registry file then names the resurrected key.
package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/testkit/pgtest"
)

func TestGateEnrollRefusesAKeyIDTheDatabaseHasSeen(t *testing.T) {
	for _, trigger := range []bool{true, false} {
		w := newKeyWorld(t)
		dsn := pgtest.NewDatabase(t)
		mustRun(t, "gate", "install", "--db", dsn)
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if !trigger {
			if _, err := db.Exec(`DROP TRIGGER keys_history ON fencegate.keys`); err != nil {
				t.Fatal(err)
			}
		}
		gk1, gk1New, gk2 := filepath.Join(w.dir, "gk-1.key"), filepath.Join(w.dir, "gk-1-new.key"), filepath.Join(w.dir, "gk-2.key")
		mustRun(t, "gate", "enroll", "--db", dsn, "--key", gk1, "--state", "retired")
		mustRun(t, "gate", "enroll", "--db", dsn, "--key", gk2, "--state", "active")
		if trigger {
			if out, code := fencegate(t, "gate", "enroll", "--db", dsn, "--key", gk1, "--state", "active"); code == 0 || !strings.Contains(out, "KEY_STATE_BACK") {
				t.Fatalf("retired gk-1 made active: exit %d\n%s", code, out)
			}
		}
		if _, err := db.Exec(`DELETE FROM fencegate.keys WHERE key_id = 'gk-1'`); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(w.dir, "gate-keys.json")
		out, code := fencegate(t, "gate", "enroll", "--db", dsn, "--key", gk1New, "--state", "active",
			"--registry-keys", file, "--gate-name", "ledger-db", "--resources", "ledger/*")
		_, statErr := os.Stat(file)
		if !trigger {
			if code != 0 || statErr != nil {
				t.Fatalf("negative control: without the trigger the resurrection is refused: exit %d\n%s", code, out)
			}
			continue
		}
		if code == 0 || !strings.Contains(out, "KEY_OTHER_SECRET") || !strings.Contains(out, "gk-1") {
			t.Fatalf("gk-1 back with another secret: exit %d\n%s", code, out)
		}
		if !os.IsNotExist(statErr) {
			t.Fatalf("the registry's gate-keys file was written after the database refused: %v", statErr)
		}
	}
}
