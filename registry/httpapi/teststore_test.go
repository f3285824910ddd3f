// This file proves nothing on its own: the store the handler tests run on.
package httpapi

import (
	"context"
	"errors"
	"testing"

	"github.com/fencegate/fencegate/registry"
)

// noStore stands in until the memory store lands: every call fails.
type noStore struct{}

var errNoStore = errors.New("test: no store")

func (noStore) Read(context.Context, string, []registry.RequestKey) (registry.Snapshot, error) {
	return registry.Snapshot{}, errNoStore
}
func (noStore) Commit(context.Context, registry.Write) (registry.CommitResult, error) {
	return registry.CommitResult{}, errNoStore
}
func (noStore) Watch(context.Context, string, uint64) (<-chan registry.RecordEvent, error) {
	return nil, errNoStore
}
func (noStore) ScanRequests(context.Context, registry.RequestKey, int) ([]registry.RequestSlot, error) {
	return nil, errNoStore
}

func newTestStore(t *testing.T) registry.Store { return noStore{} }
