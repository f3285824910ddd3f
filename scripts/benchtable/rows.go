package main

import (
	"fmt"
	"slices"
)

// rows are the comparisons of issue 30, in the order the table shows
// them, each against the peer a user would pick instead: etcd's
// concurrency.Mutex in process (the registry's benchmarks), a Mutex over
// an etcd client (serve's), the plain write and the fence written by hand
// (`UPDATE fence SET token = $t WHERE resource = $r AND token <= $t` and
// the write in one transaction; the gate's). Each names the benchmarks
// scripts/bench-all.sh runs.
var rows = slices.Concat([]row{
	{label: "registry acquire+release, one resource (embedded etcd, fsync on), release answered early", peer: "Mutex in process",
		baseBench: "BenchmarkAcquireReleaseInterleaved", baseUnit: "mutex-us/cycle",
		oursBench: "BenchmarkAcquireReleaseInterleaved", oursUnit: "registry-early-us/cycle", ratioUnit: "ratio-early",
		goal: "≤ 1.00×", goalMax: 1.00},
	{label: "  the same, release answered after its commit", peer: "Mutex in process",
		baseBench: "BenchmarkAcquireReleaseInterleaved", baseUnit: "mutex-us/cycle",
		oursBench: "BenchmarkAcquireReleaseInterleaved", oursUnit: "registry-us/cycle", ratioUnit: "ratio"},
	{label: "registry throughput, 64 resources", peer: "Mutex in process",
		baseBench: "BenchmarkThroughput64Paired", baseUnit: "mutex-cycles/s",
		oursBench: "BenchmarkThroughput64Paired", oursUnit: "registry-cycles/s", ratioUnit: "ratio",
		goal: "≥ 1.50×", goalMin: 1.50},
	{label: "  process CPU per cycle at 64 resources", peer: "Mutex in process",
		baseBench: "BenchmarkThroughput64Paired", baseUnit: "mutex-cpu-us/cycle",
		oursBench: "BenchmarkThroughput64Paired", oursUnit: "registry-cpu-us/cycle"},
	{label: "  commits per etcd transaction at 64 resources",
		oursBench: "BenchmarkThroughput64Paired", oursUnit: "writes/txn"},
	{label: "registry throughput, 64 resources, batch-signed grants", peer: "Mutex in process",
		baseBench: "BenchmarkThroughput64BatchProofsPaired", baseUnit: "mutex-cycles/s",
		oursBench: "BenchmarkThroughput64BatchProofsPaired", oursUnit: "batch-cycles/s", ratioUnit: "batch/mutex",
		goal: "≥ 1.50×", goalMin: 1.50},
	{label: "  against the registry signing each grant alone", peer: "registry, single proofs",
		baseBench: "BenchmarkThroughput64BatchProofsPaired", baseUnit: "single-cycles/s",
		oursBench: "BenchmarkThroughput64BatchProofsPaired", oursUnit: "batch-cycles/s", ratioUnit: "batch/single"},
	{label: "  signatures per grant at 64 resources",
		oursBench: "BenchmarkThroughput64BatchProofsPaired", oursUnit: "batch-sigs/grant"},
	{label: "counting semaphore, 64 semaphores of 3 permits, 4 contenders each", peer: "etcd semaphore recipe in process",
		baseBench: "BenchmarkSemaphore64Paired", baseUnit: "etcd-sem-cycles/s",
		oursBench: "BenchmarkSemaphore64Paired", oursUnit: "registry-cycles/s", ratioUnit: "ratio"},
	{label: "  process CPU per cycle, semaphores", peer: "etcd semaphore recipe in process",
		baseBench: "BenchmarkSemaphore64Paired", baseUnit: "etcd-sem-cpu-us/cycle",
		oursBench: "BenchmarkSemaphore64Paired", oursUnit: "registry-cpu-us/cycle"},
	// Lock sets (issue 46): information, no goal.
	{label: "lock set of two, taken and released, uncontended", peer: "two Mutexes in process, locked in sorted order",
		baseBench: "BenchmarkLockSetCycleInterleaved", baseUnit: "mutex2-us/cycle",
		oursBench: "BenchmarkLockSetCycleInterleaved", oursUnit: "set-us/cycle", ratioUnit: "ratio"},
	{label: "lock sets of two, 64 callers over pairs of 64 resources", peer: "two Mutexes in process, locked in sorted order",
		baseBench: "BenchmarkLockSet64Paired", baseUnit: "mutex2-cycles/s",
		oursBench: "BenchmarkLockSet64Paired", oursUnit: "set-cycles/s", ratioUnit: "ratio"},
	{label: "  process CPU per cycle, lock sets", peer: "two Mutexes in process, locked in sorted order",
		baseBench: "BenchmarkLockSet64Paired", baseUnit: "mutex2-cpu-us/cycle",
		oursBench: "BenchmarkLockSet64Paired", oursUnit: "set-cpu-us/cycle"},
	{label: "  CONFLICT answers retried per 1,000 set cycles",
		oursBench: "BenchmarkLockSet64Paired", oursUnit: "set-conflicts/1k-cycles"},
	{label: "  time the set side slept retrying them, per phase of 640 cycles",
		oursBench: "BenchmarkLockSet64Paired", oursUnit: "set-backoff-ms/phase"},
	{label: "handoff p99, 1 holder and 8 waiters", peer: "Mutex in process",
		baseBench: "BenchmarkHandoff/etcd-mutex", baseUnit: "p99-ms",
		oursBench: "BenchmarkHandoff/registry", oursUnit: "p99-ms", goal: "keep ≤ 1×", goalMax: 1.00},
	{label: "`fencegate serve` over HTTP on its embedded etcd, acquire+release", peer: "Mutex over an etcd client",
		baseBench: "BenchmarkServeCycle", baseUnit: "mutex-us/cycle",
		oursBench: "BenchmarkServeCycle", oursUnit: "serve-us/cycle", ratioUnit: "ratio",
		goal: "≤ 1.20×", goalMax: 1.20},
	{label: "  floor: two bare HTTP/1.1 exchanges of a cycle's sizes", peer: "Mutex over an etcd client",
		baseBench: "BenchmarkServeCycle", baseUnit: "mutex-us/cycle",
		oursBench: "BenchmarkServeCycle", oursUnit: "http-floor-us/cycle"},
	{label: "  serve on an etcd of its own (one hop more than the Mutex)", peer: "Mutex over an etcd client",
		baseBench: "BenchmarkServeCycleExternalEtcd", baseUnit: "mutex-us/cycle",
		oursBench: "BenchmarkServeCycleExternalEtcd", oursUnit: "serve-us/cycle", ratioUnit: "ratio"},
	{label: "`fencegate serve` over HTTP on its embedded etcd, 64 resources", peer: "Mutex over an etcd client",
		baseBench: "BenchmarkServeThroughput64", baseUnit: "mutex-cycles/s",
		oursBench: "BenchmarkServeThroughput64", oursUnit: "serve-cycles/s", ratioUnit: "ratio",
		goal: "≥ 1.00×", goalMin: 1.00},
	{label: "  process CPU per cycle at 64 resources", peer: "Mutex over an etcd client",
		baseBench: "BenchmarkServeThroughput64", baseUnit: "mutex-cpu-us/cycle",
		oursBench: "BenchmarkServeThroughput64", oursUnit: "serve-cpu-us/cycle"},
	{label: "  serve on an etcd of its own (one hop more than the Mutex)", peer: "Mutex over an etcd client",
		baseBench: "BenchmarkServeThroughput64ExternalEtcd", baseUnit: "mutex-cycles/s",
		oursBench: "BenchmarkServeThroughput64ExternalEtcd", oursUnit: "serve-cycles/s", ratioUnit: "ratio"},
	{label: "    process CPU per cycle at 64 resources, serve on an etcd of its own", peer: "Mutex over an etcd client",
		baseBench: "BenchmarkServeThroughput64ExternalEtcd", baseUnit: "mutex-cpu-us/cycle",
		oursBench: "BenchmarkServeThroughput64ExternalEtcd", oursUnit: "serve-cpu-us/cycle"},
	{label: "  commits per etcd transaction, serve at 64 resources",
		oursBench: "BenchmarkServeThroughput64Only", oursUnit: "writes/txn"},
	{label: "  heap allocations per cycle at 64 resources (whole process)", peer: "Mutex over an etcd client",
		baseBench: "BenchmarkServeThroughput64", baseUnit: "mutex-allocs/cycle",
		oursBench: "BenchmarkServeThroughput64", oursUnit: "serve-allocs/cycle"},
	{label: "  floor: CPU of two bare HTTP/1.1 exchanges, 64 clients", peer: "Mutex over an etcd client",
		baseBench: "BenchmarkServeThroughput64", baseUnit: "mutex-cpu-us/cycle",
		oursBench: "BenchmarkServeThroughput64", oursUnit: "http-floor-cpu-us/cycle"},
	{label: "`fencegate lock RESOURCE -- true`, the whole process, on serve's embedded etcd", peer: "`etcdctl lock` on the same member",
		baseBench: "BenchmarkLockCommand", baseUnit: "etcdctl-lock-ms",
		oursBench: "BenchmarkLockCommand", oursUnit: "lock-ms", ratioUnit: "ratio"},
	{label: "  floor: starting the process (`version`)", peer: "`etcdctl version`",
		baseBench: "BenchmarkLockCommand", baseUnit: "etcdctl-start-ms",
		oursBench: "BenchmarkLockCommand", oursUnit: "start-ms"},
	{label: "registry acquire+release with no other lock held (embedded etcd, fsync on)", peer: "Mutex in process, none held",
		baseBench: "BenchmarkCycleAtHeld/held=0", baseUnit: "mutex-us/cycle",
		oursBench: "BenchmarkCycleAtHeld/held=0", oursUnit: "registry-us/cycle", ratioUnit: "ratio"},
	{label: "  with 100,000 other locks held", peer: "Mutex in process, 100,000 held",
		baseBench: "BenchmarkCycleAtHeld/held=100000", baseUnit: "mutex-us/cycle",
		oursBench: "BenchmarkCycleAtHeld/held=100000", oursUnit: "registry-us/cycle", ratioUnit: "ratio"},
	{label: "live size after a sustained run, sweep on (retention passed in seconds: clock ×500), MB in use",
		oursBench: "BenchmarkSustainedLiveSize", oursUnit: "inuse-MB"},
	{label: "  its growth, last third over first (flat: 1)",
		oursBench: "BenchmarkSustainedLiveSize", oursUnit: "inuse-growth"},
	{label: "a page of 100 locks (`GET /v1/locks`) at the front of 100,000 held, serve on its embedded etcd", peer: "the same page where 100 are held",
		baseBench: "BenchmarkLsPage100k", baseUnit: "ms/page-at-100",
		oursBench: "BenchmarkLsPage100k", oursUnit: "ms/front-page", goal: "≤ 2× (issue 49)", goalMax: 2.00},
	{label: "  at the back of the 100,000", peer: "the same page where 100 are held",
		baseBench: "BenchmarkLsPage100k", baseUnit: "ms/page-at-100",
		oursBench: "BenchmarkLsPage100k", oursUnit: "ms/back-page"},
	{label: "`fencegate serve` start-up to `/readyz` with 100,000 held (embedded etcd)", peer: "its etcd alone on the same data (a Mutex's wait)",
		baseBench: "BenchmarkServeStart100k", baseUnit: "s/etcd-start-at-100k",
		oursBench: "BenchmarkServeStart100k", oursUnit: "s/start-at-100k"},
	{label: "  with one held", peer: "its etcd alone on the same data",
		baseBench: "BenchmarkServeStart100k", baseUnit: "s/etcd-start-at-1",
		oursBench: "BenchmarkServeStart100k", oursUnit: "s/start-at-1"},
	{label: "`fencegate ls --all` over 100,000 held, the whole command",
		oursBench: "BenchmarkLsAll100k", oursUnit: "s/walk", goal: "< 1 s (issue 49)", goalMax: 1.00, goalOnOurs: true},
	{label: "live bytes per held lease: etcd's size in use after a compaction (embedded etcd)", peer: "a held Mutex",
		baseBench: "BenchmarkLiveBytes/held/mutex", baseUnit: "inuse-B/lease",
		oursBench: "BenchmarkLiveBytes/held/registry", oursUnit: "inuse-B/lease"},
	{label: "  its keys and values", peer: "a held Mutex",
		baseBench: "BenchmarkLiveBytes/held/mutex", baseUnit: "kv-B/lease",
		oursBench: "BenchmarkLiveBytes/held/registry", oursUnit: "kv-B/lease"},
	{label: "live bytes per finished cycle, kept for the request retention: size in use", peer: "a finished Mutex (keeps nothing)",
		baseBench: "BenchmarkLiveBytes/finished/mutex", baseUnit: "inuse-B/cycle",
		oursBench: "BenchmarkLiveBytes/finished/registry", oursUnit: "inuse-B/cycle"},
	{label: "  its keys and values", peer: "a finished Mutex (keeps nothing)",
		baseBench: "BenchmarkLiveBytes/finished/mutex", baseUnit: "kv-B/cycle",
		oursBench: "BenchmarkLiveBytes/finished/registry", oursUnit: "kv-B/cycle"},
	fenceRow("SQLite, synchronous FULL", "BenchmarkWritePaired/sqlite-FULL"),
	plainRow("SQLite, synchronous FULL", "BenchmarkWritePaired/sqlite-FULL"),
}, floorRows("BenchmarkWriteFloor/sqlite-FULL", true, 1.05), []row{
	fenceRow("SQLite, synchronous NORMAL", "BenchmarkWritePaired/sqlite-NORMAL"),
	plainRow("SQLite, synchronous NORMAL", "BenchmarkWritePaired/sqlite-NORMAL"),
}, floorRows("BenchmarkWriteFloor/sqlite-NORMAL", true, 1.05), []row{
	{label: "SQLite WAL pages per write", peer: "plain write",
		baseBench: "BenchmarkWALFrames/plain", baseUnit: "frames/op",
		oursBench: "BenchmarkWALFrames/fenced", oursUnit: "frames/op"},
	{label: "  the hand-rolled fence (its UPDATE rewrites the token its row holds)", peer: "plain write",
		baseBench: "BenchmarkWALFrames/plain", baseUnit: "frames/op",
		oursBench: "BenchmarkWALFrames/hand-fence", oursUnit: "frames/op"},
	{label: "  the hand-rolled fence counting its writes", peer: "plain write",
		baseBench: "BenchmarkWALFrames/plain", baseUnit: "frames/op",
		oursBench: "BenchmarkWALFrames/hand-fence-counted", oursUnit: "frames/op"},
	{label: "  floor: a plain write plus one row in a second table keyed like the receipts", peer: "plain write",
		baseBench: "BenchmarkWALFramesFloor/ledger-only", baseUnit: "frames/op",
		oursBench: "BenchmarkWALFramesFloor/ledger+keyed-table", oursUnit: "frames/op"},
	{label: "  floor: the same into a rowid table", peer: "plain write",
		baseBench: "BenchmarkWALFramesFloor/ledger-only", baseUnit: "frames/op",
		oursBench: "BenchmarkWALFramesFloor/ledger+rowid-table", oursUnit: "frames/op"},
	fenceRow("PostgreSQL sync on, database/sql Run", "BenchmarkWritePaired/postgres-sync-on"),
	plainRow("PostgreSQL sync on, database/sql Run", "BenchmarkWritePaired/postgres-sync-on"),
}, floorRows("BenchmarkWriteFloorRun/postgres-sync-on", false, 1.10), []row{
	fenceRow("PostgreSQL sync off, database/sql Run", "BenchmarkWritePaired/postgres-sync-off"),
	plainRow("PostgreSQL sync off, database/sql Run", "BenchmarkWritePaired/postgres-sync-off"),
}, floorRows("BenchmarkWriteFloorRun/postgres-sync-off", false, 1.10), []row{
	fenceRow("PostgreSQL sync on, pgx RunPgx", "BenchmarkWritePairedPgx/postgres-sync-on"),
	plainRow("PostgreSQL sync on, pgx RunPgx", "BenchmarkWritePairedPgx/postgres-sync-on"),
}, floorRows("BenchmarkWriteFloorPgx/postgres-sync-on", false, 1.05), []row{
	fenceRow("PostgreSQL sync off, pgx RunPgx", "BenchmarkWritePairedPgx/postgres-sync-off"),
	plainRow("PostgreSQL sync off, pgx RunPgx", "BenchmarkWritePairedPgx/postgres-sync-off"),
}, floorRows("BenchmarkWriteFloorPgx/postgres-sync-off", false, 1.05), guardedRows(), sqlGateRows("on"), sqlGateRows("off"), []row{
	// The Redis gate (gate/redisgate): its peer is the fence a Redis user
	// writes by hand, one Lua script; issue 45's goal is ≤ 1.15× it. The
	// receipt peer (that script storing one receipt too) is the floor.
	{label: "fenced write, Redis (appendfsync always)", peer: "hand-rolled fence", baseBench: "BenchmarkWritePaired/redis", baseUnit: "fence-µs",
		oursBench: "BenchmarkWritePaired/redis", oursUnit: "fenced-µs", ratioUnit: "fenced/fence", goal: "≤ 1.15×", goalMax: 1.15},
	plainRow("Redis", "BenchmarkWritePaired/redis"),
	{label: "  floor: the hand-rolled fence script storing one receipt as the gate's", peer: "hand-rolled fence", baseBench: "BenchmarkWritePaired/redis", baseUnit: "fence-µs",
		oursBench: "BenchmarkWritePaired/redis", oursUnit: "receipted-µs", ratioUnit: "receipted/fence"},
	{label: "  the fenced write against the receipt peer", peer: "hand-rolled fence plus one receipt", baseBench: "BenchmarkWritePaired/redis", baseUnit: "receipted-µs",
		oursBench: "BenchmarkWritePaired/redis", oursUnit: "fenced-µs", ratioUnit: "fenced/receipted"},
})

// guardedRows are the fenced write into a table the coverage guard
// protects (WritePairedGuarded), against the hand-rolled fence and the
// plain write into its unprotected twin: what the guard adds (issue 43).
// No goal: issue 30's are for the write alone.
func guardedRows() []row {
	var rows []row
	for _, c := range []struct{ label, bench string }{
		{"SQLite, synchronous NORMAL", "BenchmarkWritePairedGuarded/sqlite-NORMAL"},
		{"PostgreSQL sync off, database/sql Run", "BenchmarkWritePairedGuarded/postgres-sync-off"},
		{"PostgreSQL sync off, pgx RunPgx", "BenchmarkWritePairedGuardedPgx"},
	} {
		f := fenceRow(c.label+", into a protected table", c.bench)
		f.goal, f.goalMax = "", 0
		rows = append(rows, f, plainRow(c.label+", into a protected table", c.bench))
	}
	return rows
}

// sqlGateRows are issue 29's comparison: the gate inside PostgreSQL (BEGIN,
// SELECT fencegate.apply, the INSERT, COMMIT) against the hand-rolled
// fence, the plain write and sqlgate.RunPgx, all four alternating on one
// pgx connection (gate/pggate's ApplyPaired). Issue 45's goal is against
// RunPgx: ≤ 1.5×.
func sqlGateRows(sync string) []row {
	bench := "BenchmarkApplyPaired/postgres-sync-" + sync
	label := "fencegate.apply inside PostgreSQL, sync " + sync
	return []row{
		{label: label, peer: "hand-rolled fence", baseBench: bench, baseUnit: "fence-µs", oursBench: bench, oursUnit: "apply-µs", ratioUnit: "apply/fence"},
		{label: "  against the plain write", peer: "plain write", baseBench: bench, baseUnit: "plain-µs", oursBench: bench, oursUnit: "apply-µs", ratioUnit: "apply/plain"},
		{label: "  against sqlgate.RunPgx", peer: "RunPgx", baseBench: bench, baseUnit: "runpgx-µs", oursBench: bench, oursUnit: "apply-µs", ratioUnit: "apply/runpgx",
			goal: "≤ 1.50×", goalMax: 1.50},
	}
}

// fenceRow is the gate against the hand-rolled fence, the goal,
// from WritePaired's fence-µs, fenced-µs and their paired ratio.
func fenceRow(label, bench string) row {
	return row{label: "fenced write, " + label, peer: "hand-rolled fence", baseBench: bench, baseUnit: "fence-µs",
		oursBench: bench, oursUnit: "fenced-µs", ratioUnit: "fenced/fence", goal: "≤ 1.15×", goalMax: 1.15}
}

// floorRows are, from WriteFloor, WriteFloorPgx or WriteFloorRun, the
// naive receipt design (the peer plus one receipt row keyed like the
// gate's) and the fenced write of the same run, each against the
// hand-rolled fence, then the fenced write against that receipt peer
// with issue 45's goal (goalMax: ≤ 1.05×, Run's ≤ 1.10×), and a gate
// that caches no state against the same peer (the cold lane); with counted
// (SQLite), first the floor of any gate that keeps a record of each
// write (the hand-rolled fence also counting its writes: the one page
// the peer leaves clean).
func floorRows(bench string, counted bool, goalMax float64) []row {
	var rs []row
	if counted {
		rs = append(rs, row{label: "  floor: the hand-rolled fence counting its writes (one changed row a write)", peer: "hand-rolled fence", baseBench: bench, baseUnit: "fence-µs",
			oursBench: bench, oursUnit: "counted-µs", ratioUnit: "counted/fence"})
	}
	return append(rs, []row{
		{label: "  the hand-rolled fence plus one receipt row keyed like the gate's", peer: "hand-rolled fence", baseBench: bench, baseUnit: "fence-µs",
			oursBench: bench, oursUnit: "receipted-µs", ratioUnit: "receipted/fence"},
		{label: "  the fenced write in the same run", peer: "hand-rolled fence", baseBench: bench, baseUnit: "fence-µs",
			oursBench: bench, oursUnit: "fenced-µs", ratioUnit: "fenced/fence"},
		{label: "  the fenced write against the receipt peer", peer: "hand-rolled fence plus one receipt row", baseBench: bench, baseUnit: "receipted-µs",
			oursBench: bench, oursUnit: "fenced-µs", ratioUnit: "fenced/receipted", goal: fmt.Sprintf("≤ %.2f×", goalMax), goalMax: goalMax},
		{label: "    a gate caching no state (every write reads it first, as a first write does)", peer: "hand-rolled fence plus one receipt row", baseBench: bench, baseUnit: "receipted-µs",
			oursBench: bench, oursUnit: "cold-µs", ratioUnit: "cold/receipted"},
	}...)
}

// plainRow is the same write against the plain write, for the record.
func plainRow(label, bench string) row {
	return row{label: "  " + label + ", against the plain write", peer: "plain write", baseBench: bench, baseUnit: "plain-µs",
		oursBench: bench, oursUnit: "fenced-µs", ratioUnit: "fenced/plain"}
}
