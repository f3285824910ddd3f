package zkstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// errSetsNotYet: lock-set writes are not built on ZooKeeper yet (issue 46).
var errSetsNotYet = errors.New("zkstore: lock-set reads and writes are not implemented yet")

// ReadSet implements registry.Store.
func (s *Store) ReadSet(ctx context.Context, resources []string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	if err := registry.CheckSetNames(resources); err != nil {
		return registry.Snapshot{}, fmt.Errorf("zkstore: read set: %w", err)
	}
	return registry.Snapshot{}, errSetsNotYet
}
