#!/usr/bin/env bash
# Compares the gate's write benchmarks (fenced vs plain, WritePaired) of a
# base revision with the work tree. The two test binaries run in turn,
# ROUNDS times, so load on a shared machine hits both alike; benchstat
# then reports each metric's median per side (fenced/plain is the one to
# read). Usage:
#
#   scripts/bench-ab.sh [BASE_REV] [ROUNDS] [BENCH]
#
# BASE_REV defaults to HEAD (the work tree against its last commit),
# ROUNDS to 5, BENCH to WritePaired. PostgreSQL runs when initdb is found
# (set FENCEGATE_REQUIRE_PG=1 to insist). Output: bench-ab/{base,new}.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-HEAD} rounds=${2:-5} bench=${3:-WritePaired}
out=bench-ab
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add --detach "$tmp/base" "$base" >/dev/null
(cd "$tmp/base" && go test -c -o "$tmp/base.test" ./gate/sqlgate)
go test -c -o "$tmp/new.test" ./gate/sqlgate
: >"$out/base.txt"
: >"$out/new.txt"
for i in $(seq 1 "$rounds"); do
  for side in base new; do
    echo "round $i/$rounds: $side"
    (cd "$tmp" && "./$side.test" -test.run '^$' -test.bench "$bench" -test.benchtime 1500x -test.count 1) >>"$out/$side.txt"
  done
done
go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da "$out/base.txt" "$out/new.txt"
