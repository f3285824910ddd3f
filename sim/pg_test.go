// This file proves the PostgreSQL mode decides as the fast mode does:
// the same seed on gate/pggate (the decision in PL/pgSQL, on a real
// PostgreSQL) and on gate/memgate gives the same event-log digest.
package sim

import (
	"os"
	"strconv"
	"testing"

	"github.com/fencegate/fencegate/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// pgRoundsEnv sets the rounds of TestPGModeAgreesWithFastMode (CI runs
// 2000; the default keeps go test ./... short).
const pgRoundsEnv = "FENCEGATE_SIM_PG_ROUNDS"

func TestPGModeAgreesWithFastMode(t *testing.T) {
	// The simulator is not measuring commits: no WAL flush per write.
	dsn := pgtest.WithParam(pgtest.NewDatabase(t), "synchronous_commit", "off")
	rounds := 200
	if s := os.Getenv(pgRoundsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q", pgRoundsEnv, s)
		}
		rounds = n
	}
	cfg := Config{Rounds: rounds, Seed: 17, Rates: DefaultRates, Parallel: 2}
	mem := run(t, cfg)
	cfg.PG, cfg.PGDSN = true, dsn
	pg := run(t, cfg)
	if pg.EventLogDigest != mem.EventLogDigest || pg.Decisions != mem.Decisions || !pg.OK() {
		for _, v := range pg.Violations {
			t.Errorf("round %d %s: %s\n  %s", v.Round, v.Kind, v.Detail, v.Repro)
		}
		t.Fatalf("PG mode: digest %s, %d decisions, %d violations; fast mode: digest %s, %d decisions",
			pg.EventLogDigest, pg.Decisions, pg.ViolationsTotal, mem.EventLogDigest, mem.Decisions)
	}
	t.Logf("%d rounds: digest %s, %d decisions, %.1f s on PostgreSQL", rounds, pg.EventLogDigest, pg.Decisions, pg.ElapsedS)
}
