package etcdstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// errSetsNotYet: lock-set writes are not built on etcd yet (issue 46).
var errSetsNotYet = errors.New("etcdstore: lock-set reads and writes are not implemented yet")

// ReadSet implements registry.Store.
func (s *Store) ReadSet(ctx context.Context, resources []string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	if err := registry.CheckSetNames(resources); err != nil {
		return registry.Snapshot{}, fmt.Errorf("etcdstore: read set: %w", err)
	}
	return registry.Snapshot{}, errSetsNotYet
}
