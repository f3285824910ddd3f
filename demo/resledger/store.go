package resledger

import (
	"context"

	"github.com/fencegate/fencegate/demo/ledger"
	"github.com/fencegate/fencegate/gate"
)

// Store is where one kind of resource keeps the ledger.
type Store interface {
	// Write applies entries under m through the gate (or, lease-only with
	// m nil, without it) as caller.
	Write(ctx context.Context, caller string, m *gate.Mutation, entries []ledger.Entry) (gate.Receipt, error)
	// QueryOperation is the gate's receipt query.
	QueryOperation(ctx context.Context, resource, operationID string, fence uint64) (gate.Answer, error)
	// Value reads one ledger key.
	Value(ctx context.Context, key string) (ledger.Value, bool, error)
	// Describe names the store for the service's start line.
	Describe() string
}
