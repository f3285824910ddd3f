package main

// rows are the comparisons of issue 19, in the order the table shows
// them; each names the benchmarks scripts/bench-all.sh runs.
var rows = []row{
	{label: "registry acquire+release, one resource (embedded etcd, fsync on)",
		baseBench: "BenchmarkAcquireReleaseInterleaved", baseUnit: "mutex-us/cycle",
		oursBench: "BenchmarkAcquireReleaseInterleaved", oursUnit: "registry-us/cycle", ratioUnit: "ratio",
		goal: "≤ 1.00×", goalMax: 1.00},
	{label: "registry throughput, 64 resources",
		baseBench: "BenchmarkThroughput64Paired", baseUnit: "mutex-cycles/s",
		oursBench: "BenchmarkThroughput64Paired", oursUnit: "registry-cycles/s", ratioUnit: "ratio",
		goal: "≥ 1.50×", goalMin: 1.50},
	{label: "  process CPU per cycle at 64 resources",
		baseBench: "BenchmarkThroughput64Paired", baseUnit: "mutex-cpu-us/cycle",
		oursBench: "BenchmarkThroughput64Paired", oursUnit: "registry-cpu-us/cycle"},
	{label: "  commits per etcd transaction at 64 resources",
		oursBench: "BenchmarkThroughput64Paired", oursUnit: "writes/txn"},
	{label: "handoff p99, 1 holder and 8 waiters",
		baseBench: "BenchmarkHandoff/etcd-mutex", baseUnit: "p99-ms",
		oursBench: "BenchmarkHandoff/registry", oursUnit: "p99-ms", goal: "keep ≤ 1×", goalMax: 1.00},
	{label: "`fencegate serve` over HTTP, acquire+release",
		baseBench: "BenchmarkServeCycle", baseUnit: "mutex-us/cycle",
		oursBench: "BenchmarkServeCycle", oursUnit: "serve-us/cycle", ratioUnit: "ratio"},
	{label: "`fencegate serve` over HTTP, 64 resources",
		baseBench: "BenchmarkServeThroughput64", baseUnit: "mutex-cycles/s",
		oursBench: "BenchmarkServeThroughput64", oursUnit: "serve-cycles/s", ratioUnit: "ratio"},
	writeRow("SQLite, synchronous FULL", "BenchmarkWritePaired/sqlite-FULL", "≤ 1.10×", 1.10),
	writeRow("SQLite, synchronous NORMAL", "BenchmarkWritePaired/sqlite-NORMAL", "≤ 1.60×", 1.60),
	{label: "SQLite WAL pages per write",
		baseBench: "BenchmarkWALFrames/plain", baseUnit: "frames/op",
		oursBench: "BenchmarkWALFrames/fenced", oursUnit: "frames/op", goal: "≤ 1.6 pages", goalMax: 1.6, goalOnOurs: true},
	{label: "  floor: a plain write plus one row in a second table keyed like the receipts",
		baseBench: "BenchmarkWALFramesFloor/ledger-only", baseUnit: "frames/op",
		oursBench: "BenchmarkWALFramesFloor/ledger+keyed-table", oursUnit: "frames/op"},
	{label: "  floor: the same into a rowid table",
		baseBench: "BenchmarkWALFramesFloor/ledger-only", baseUnit: "frames/op",
		oursBench: "BenchmarkWALFramesFloor/ledger+rowid-table", oursUnit: "frames/op"},
	writeRow("PostgreSQL sync on, database/sql Run", "BenchmarkWritePaired/postgres-sync-on", "≤ 1.25×", 1.25),
	writeRow("PostgreSQL sync off, database/sql Run", "BenchmarkWritePaired/postgres-sync-off", "≤ 1.50×", 1.50),
	writeRow("PostgreSQL sync on, pgx RunPgx", "BenchmarkWritePairedPgx/postgres-sync-on", "≤ 1.25×", 1.25),
	writeRow("PostgreSQL sync off, pgx RunPgx", "BenchmarkWritePairedPgx/postgres-sync-off", "≤ 1.50×", 1.50),
}

// writeRow is a fenced-vs-plain row of WritePaired.
func writeRow(label, bench, goal string, max float64) row {
	return row{label: "fenced write, " + label, baseBench: bench, baseUnit: "plain-µs", oursBench: bench, oursUnit: "fenced-µs",
		ratioUnit: "fenced/plain", goal: goal, goalMax: max}
}
