#!/usr/bin/env bash
# Builds a static fencegate binary (no cgo: SQLite is modernc.org/sqlite,
# etcd is pure Go), stamped with a version and commit. The Dockerfile and
# cmd/fencegate/packaging_test.go both use it.
# Usage: scripts/build-static.sh OUT [VERSION [COMMIT]]
set -euo pipefail
out=${1:?usage: build-static.sh OUT [VERSION [COMMIT]]}
version=${2:-${FENCEGATE_VERSION:-}}
commit=${3:-${FENCEGATE_COMMIT:-}}
cd "$(dirname "$0")/.."
if [ -z "$commit" ] && git rev-parse HEAD >/dev/null 2>&1; then
  commit=$(git rev-parse HEAD)
fi
ldflags="-s -w"
[ -n "$version" ] && ldflags="$ldflags -X main.version=$version"
[ -n "$commit" ] && ldflags="$ldflags -X main.commit=$commit"
CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$out" ./cmd/fencegate
