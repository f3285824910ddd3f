// This file gives the benchmarks their registry with releases answered
// early (registry.Config.ReleaseEarly). It is not a bench*_test.go file:
// scripts/bench-all.sh copies those into a base revision, which gets a
// stub of newEarlyRegistry instead (a durable release: what the base had).
package etcdstore

import (
	"context"
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/storetest"
)

// newEarlyRegistry is storetest.NewRegistry with Config.ReleaseEarly.
func newEarlyRegistry(b testing.TB, s registry.Store) *registry.Registry {
	return storetest.NewRegistryWith(b, s, nil, true)
}

// flushEarly waits for the commits of reg's releases answered early.
func flushEarly(ctx context.Context, reg *registry.Registry) error { return reg.FlushReleases(ctx) }
