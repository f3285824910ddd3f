#!/usr/bin/env bash
# Runs every benchmark that compares fencegate with the peer a user would
# pick instead, in the same run — the registry against etcd's
# concurrency.Mutex in process on one embedded etcd (fsync on), the
# counting semaphore against a Consul-style semaphore recipe over etcd's
# concurrency package at 64 semaphores, a lock set of two against two
# etcd Mutexes taken in sorted order (one cycle, and 64 callers over
# pairs of 64 resources),
# `fencegate serve` over HTTP against a Mutex over a real etcd client
# (serve on its embedded etcd, the quick start's, and on an etcd of its
# own; and two bare HTTP exchanges, the hop's floor), `fencegate lock`
# against `etcdctl lock` as whole processes, each fenced write
# against the plain write and the fence written by hand on the same
# database (SQLite FULL/NORMAL, PostgreSQL synchronous_commit on/off
# through database/sql and pgx), the gate inside PostgreSQL
# (fencegate.apply) against the same peers and RunPgx, SQLite WAL pages
# per write, the Redis gate against MULTI/EXEC, a hand-rolled fence
# script and that script storing one receipt (the receipt peer) on one
# redis-server, and the scale record (issue 49): the cycle
# with none and 100,000 other locks held against a Mutex's at the same,
# the listing at 100,000 held locks (a page against the page where 100
# are held, `ls --all`), serve's start-up to /readyz at 100,000 against
# at one, the live bytes per held lease and per finished cycle against a
# Mutex's, and the live size after a sustained run — and prints
# one Markdown table of medians, ratios, issue 30's goals and whether each
# holds (a peer whose benchmark this tree lacks reads "not run").
#
#   scripts/bench-all.sh [ROUNDS] [BASE_REV]
#
# ROUNDS (default 5): every benchmark runs ROUNDS times, round by round,
# so load on a shared machine falls on all of them alike. BASE_REV: the
# same benchmarks also run on that revision (this tree's benchmark files
# copied in; a benchmark the revision cannot build is left out), each
# round alternating base and work tree, and the table gains the ratio
# before. PostgreSQL runs when initdb is found (FENCEGATE_REQUIRE_PG=1 to
# insist). Output: bench-all/{new,base}.txt and bench-all/table.md. A
# benchmark that fails is named on stderr and the rest still run; the
# script then prints the table (its rows read "not run" where nothing
# came out) and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5} base=${2:-}
out=bench-all
mkdir -p "$out"
tmp=$(mktemp -d)
cleanup() {
  [ -n "$base" ] && git worktree remove --force "$tmp/base" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT

# package | test binary | -test.bench | -test.benchtime
specs=(
  "./registry/etcdstore etcdstore ^BenchmarkAcquireReleaseInterleaved$ 300x"
  "./registry/etcdstore etcdstore ^BenchmarkThroughput64Paired$ 5x"
  "./registry/etcdstore etcdstore ^BenchmarkThroughput64BatchProofsPaired$ 5x"
  "./registry/etcdstore etcdstore ^BenchmarkHandoff$ 300x"
  "./registry/etcdstore etcdstore ^BenchmarkSemaphore64Paired$ 5x"
  "./registry/etcdstore etcdstore ^BenchmarkLockSetCycleInterleaved$ 300x"
  "./registry/etcdstore etcdstore ^BenchmarkLockSet64Paired$ 5x"
  "./cmd/fencegate fencegate ^BenchmarkServeCycle(ExternalEtcd)?$ 300x"
  "./cmd/fencegate fencegate ^BenchmarkServeThroughput64(ExternalEtcd)?$ 5x"
  "./cmd/fencegate fencegate ^BenchmarkServeThroughput64Only$ 5x"
  "./cmd/fencegate fencegate ^BenchmarkLockCommand$ 30x"
  "./registry/etcdstore etcdstore ^BenchmarkCycleAtHeld$ 300x"
  "./cmd/fencegate fencegate ^BenchmarkLsPage100k$ 300x"
  "./cmd/fencegate fencegate ^BenchmarkServeStart100k$ 5x"
  "./cmd/fencegate fencegate ^BenchmarkLsAll100k$ 2x"
  "./registry/etcdstore etcdstore ^BenchmarkLiveBytes$ 10000x"
  "./registry/etcdstore etcdstore ^BenchmarkSustainedLiveSize$ 1x"
  "./gate/sqlgate sqlgate ^BenchmarkWritePaired(Pgx)?$ 1500x"
  "./gate/sqlgate sqlgate ^BenchmarkWritePairedGuarded(Pgx)?$ 1500x"
  "./gate/sqlgate sqlgate ^BenchmarkWALFrames(Floor)?$ 1500x"
  "./gate/sqlgate sqlgate ^BenchmarkWriteFloor(Pgx|Run)?$ 1500x"
  "./gate/pggate pggate ^BenchmarkApplyPaired$ 1500x"
  "./gate/redisgate redisgate ^BenchmarkWritePaired$ 3000x"
)
pkgs=(./registry/etcdstore ./cmd/fencegate ./gate/sqlgate ./gate/pggate ./gate/redisgate)

build() { # side dir
  local side=$1 dir=$2 pkg
  mkdir -p "$tmp/$side"
  for pkg in "${pkgs[@]}"; do
    if ! (cd "$dir" && go test -c -o "$tmp/$side/$(basename "$pkg").test" "$pkg") >"$tmp/$side-build.log" 2>&1; then
      echo "bench-all: $side: $pkg does not build; its benchmarks are left out" >&2
      sed 's/^/  /' "$tmp/$side-build.log" | head -20 >&2
    fi
  done
}

# overlay copies this tree's benchmark files into the base worktree, with
# testkit/benchpair, which rotates their writes, and a stub where the base
# lacks what a benchmark only reports on.
overlay() {
  local b=$tmp/base pkg f
  for pkg in "${pkgs[@]}"; do
    [ -d "$b/$pkg" ] || continue # a package the base lacks: its benchmarks are left out
    for f in "$pkg"/bench*_test.go; do cp "$f" "$b/$f"; done
  done
  mkdir -p "$b/testkit/benchpair" && cp testkit/benchpair/*.go "$b/testkit/benchpair/" # their rotation
  [ -f "$b/gate/sqlgate/pgx.go" ] || rm -f "$b/gate/sqlgate/bench_pgx_test.go"
  if [ ! -f "$b/gate/sqlgate/cache.go" ]; then # a base whose gate caches no state: its cold lane is the gate itself
    printf 'package sqlgate_test\n\nimport (\n\t"testing"\n\n\t"github.com/fencegate/fencegate/gate/sqlgate"\n)\n\nfunc coldGate(_ testing.TB, e *env, _ *sqlgate.Dialect) *sqlgate.Gate { return e.g }\n' >"$b/gate/sqlgate/zz_coldgate_test.go"
  fi
  [ -f "$b/registry/lockset.go" ] || rm -f "$b/registry/etcdstore/bench_lockset_test.go" # a base without lock sets
  if [ ! -f "$b/client/httpclient/batch.go" ]; then
    printf 'package main\n\nimport "github.com/fencegate/fencegate/client/httpclient"\n\nfunc serveBatching() []httpclient.ClientOption { return nil }\n' >"$b/cmd/fencegate/zz_servebatch_test.go"
  fi
  if [ ! -f "$b/registry/release_early.go" ]; then # a base before the release answered early: its release is durable
    printf 'package etcdstore\n\nimport (\n\t"context"\n\t"testing"\n\n\t"github.com/fencegate/fencegate/registry"\n\t"github.com/fencegate/fencegate/testkit/storetest"\n)\n\nfunc newEarlyRegistry(b testing.TB, s registry.Store) *registry.Registry { return storetest.NewRegistry(b, s, nil) }\n\nfunc flushEarly(context.Context, *registry.Registry) error { return nil }\n' >"$b/registry/etcdstore/zz_early_test.go"
    printf 'package main\n\nfunc serveReleaseArgs() []string { return nil }\n' >"$b/cmd/fencegate/zz_release_test.go"
  fi
  if [ ! -f "$b/registry/etcdstore/batch.go" ]; then
    printf 'package etcdstore\n\nfunc batchStats(*Store) (uint64, uint64) { return 0, 0 }\n' >"$b/registry/etcdstore/zz_batchstats_test.go"
  fi
  if [ ! -f "$b/registry/etcdstore/batch_failed_helper_test.go" ]; then # a base whose batcher does not count failed compares
    printf 'package etcdstore\n\nfunc failedWrites(*Store) uint64 { return 0 }\n' >"$b/registry/etcdstore/zz_failed_test.go"
  fi
}

build new .
if [ -n "$base" ]; then
  git worktree add --detach "$tmp/base" "$base" >/dev/null
  overlay
  build base "$tmp/base"
fi

failed=""
: >"$out/new.txt"
[ -n "$base" ] && : >"$out/base.txt"
for i in $(seq 1 "$rounds"); do
  for spec in "${specs[@]}"; do
    read -r _ bin bench benchtime <<<"$spec"
    for side in ${base:+base} new; do
      [ -x "$tmp/$side/$bin.test" ] || continue
      echo "round $i/$rounds: $side $bench" >&2
      if ! (cd "$tmp" && "./$side/$bin.test" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" -test.count 1) >>"$out/$side.txt"; then
        echo "bench-all: round $i: $side $bench failed (its output is in $out/$side.txt); the rounds go on" >&2
        failed="$failed $side:$bench"
      fi
    done
  done
done

go run ./scripts/benchtable "$out/new.txt" ${base:+"$out/base.txt"} | tee "$out/table.md"
if [ -n "$failed" ]; then
  echo "bench-all: failed:$failed" >&2
  exit 1
fi
