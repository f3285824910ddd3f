// This file proves nothing on its own: the store the handler tests run on,
// the real memory store behind a switch that can make it fail.
package httpapi

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/registry/memstore"
)

// flakyStore is the memory store, or a store that cannot be reached while
// down is set.
type flakyStore struct {
	registry.Store
	down atomic.Bool
}

var errStoreDown = errors.New("test: store unreachable")

func (s *flakyStore) Read(ctx context.Context, res string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	if s.down.Load() {
		return registry.Snapshot{}, errStoreDown
	}
	return s.Store.Read(ctx, res, keys)
}

func (s *flakyStore) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	if s.down.Load() {
		return registry.CommitResult{}, errStoreDown
	}
	return s.Store.Commit(ctx, w)
}

func newTestStore(t testing.TB) *flakyStore { return &flakyStore{Store: memstore.New()} }

func (s *flakyStore) ReadSet(ctx context.Context, resources []string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	if s.down.Load() {
		return registry.Snapshot{}, errStoreDown
	}
	return s.Store.ReadSet(ctx, resources, keys)
}
