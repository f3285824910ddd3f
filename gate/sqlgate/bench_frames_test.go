// This file counts the SQLite pages a write appends to the WAL (each is a
// frame: two write syscalls, and an fsync's worth of data under FULL), for
// the plain write, the hand-rolled fence (bench_pair_test.go), the same
// fence counting its writes (bench_floor_test.go) and the fenced write on
// the same schema, and for the fenced write to a table
// the coverage guard protects. Unlike a
// timing, the count does not depend on the machine's load: it is the
// number the gate's storage layout decides.
package sqlgate_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
)

// walFrameBytes is one WAL frame: a 24-byte header and a 4096-byte page
// (SQLite's default page size, which OpenSQLite keeps).
const walFrameBytes = 24 + 4096

func BenchmarkWALFrames(b *testing.B) {
	for _, name := range []string{"plain", "hand-fence", "hand-fence-counted", "fenced", "fenced-guarded"} {
		fenced := name == "fenced" || name == "fenced-guarded"
		b.Run(name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "frames.db")
			be := backend{"sqlite", sqlgate.SQLite, func(t testing.TB) *sql.DB {
				db, err := sqlgate.OpenSQLite(path, "NORMAL")
				if err != nil {
					t.Fatal(err)
				}
				// No checkpoint may reset the WAL while it is measured.
				if _, err := db.Exec("PRAGMA wal_autocheckpoint=0"); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			}}
			e := newEnv(b, be, nil)
			if name == "fenced-guarded" { // the coverage guard on the ledger
				if err := e.g.Protect(e.ctx, e.db, "ledger", gate.ModeEnforce, "bench"); err != nil {
					b.Fatal(err)
				}
			}
			ms := segments(e, b.N)
			e.seedFence(ms)
			e.seedCountedFence(ms)
			e.exec("PRAGMA wal_checkpoint(TRUNCATE)")
			b.ResetTimer()
			for _, m := range ms {
				var err error
				switch {
				case fenced:
					_, err = e.g.Run(e.ctx, e.db, owner, m, write(m, "x"))
				case name == "hand-fence":
					err = handFencedWrite(e.ctx, e.db, m)
				case name == "hand-fence-counted":
					err = countedFencedWrite(e.ctx, e.db, m)
				default:
					err = plainWrite(e.ctx, e.db, m)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			fi, err := os.Stat(path + "-wal")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fi.Size()-32)/walFrameBytes/float64(b.N), "frames/op")
		})
	}
}

// BenchmarkWALFramesFloor counts the pages a plain ledger write appends
// alone and with one 150-byte row into a second table: a rowid table, and
// a WITHOUT ROWID table keyed like the receipts. Any fenced write touches
// two b-trees, so these are the floors a receipt layout can reach.
func BenchmarkWALFramesFloor(b *testing.B) {
	for _, c := range []struct{ name, ddl, ins string }{
		{"ledger-only", "", ""},
		{"ledger+rowid-table", `CREATE TABLE x (id INTEGER PRIMARY KEY, resource TEXT, fence INT, seq INT, pad BLOB)`,
			`INSERT INTO x (resource, fence, seq, pad) VALUES ('bench/r1', 5, $1, randomblob(110))`},
		{"ledger+keyed-table", `CREATE TABLE x (resource TEXT, fence INT, seq INT, pad BLOB, PRIMARY KEY (resource, fence, seq)) WITHOUT ROWID`,
			`INSERT INTO x (resource, fence, seq, pad) VALUES ('bench/r1', 5, $1, randomblob(110))`},
	} {
		b.Run(c.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "floor.db")
			db, err := sqlgate.OpenSQLite(path, "NORMAL")
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			for _, q := range []string{"PRAGMA wal_autocheckpoint=0", fmt.Sprintf(ledgerDDL, "INTEGER PRIMARY KEY"), c.ddl, "PRAGMA wal_checkpoint(TRUNCATE)"} {
				if _, err := db.Exec(q); q != "" && err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				tx, err := db.Begin()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := tx.Exec(`INSERT INTO ledger (resource, fence, seq, payload) VALUES ('bench/r1', 5, $1, 'x')`, i); err != nil {
					b.Fatal(err)
				}
				if c.ins != "" {
					if _, err := tx.Exec(c.ins, i); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			fi, err := os.Stat(path + "-wal")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fi.Size()-32)/walFrameBytes/float64(b.N), "frames/op")
		})
	}
}
