// This file gives the benchmarks their registry with releases answered
// early (registry.Config.ReleaseEarly). It is not a bench*_test.go file:
// scripts/bench-all.sh copies those into a base revision, which gets a
// stub of newEarlyRegistry instead (a durable release: what the base had).
package etcdstore

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/storetest"
)

// newEarlyRegistry is storetest.NewRegistry with Config.ReleaseEarly;
// with FENCEGATE_BENCH_GRANT_BATCH_PROOFS=true also with
// Config.BatchGrantProofs (serve --release-early --grant-batch-proofs):
//
//	FENCEGATE_BENCH_GRANT_BATCH_PROOFS=true go test ./registry/etcdstore -run '^$' -bench Throughput64Paired
func newEarlyRegistry(b testing.TB, s registry.Store) *registry.Registry {
	if os.Getenv("FENCEGATE_BENCH_GRANT_BATCH_PROOFS") != "true" {
		return storetest.NewRegistryWith(b, s, nil, true)
	}
	k, err := grant.GenerateKey(grant.AlgEd25519, "bench", bytes.NewReader(bytes.Repeat([]byte{1}, 32)))
	if err != nil {
		b.Fatal(err)
	}
	cfg := registry.DefaultConfig(1)
	cfg.WaitPollMsMax = 50
	cfg.ReleaseEarly, cfg.BatchGrantProofs = true, true
	r, err := registry.New(s, cfg, clock.System{}, k)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.FlushReleases(ctx); err != nil {
			b.Errorf("releases still in flight: %v", err)
		}
	})
	return r
}

// flushEarly waits for the commits of reg's releases answered early.
func flushEarly(ctx context.Context, reg *registry.Registry) error { return reg.FlushReleases(ctx) }
