package registry

import (
	"context"
	"fmt"

	"github.com/fencegate/fencegate/wire"
)

// keyHistoryRetriesMax bounds AdmitGateKeys' compare-and-swap retries:
// each is another replica's load of gate keys landing in between, which
// happens at the pace of operators' reloads.
const keyHistoryRetriesMax = 16

// KeyAdmission is what AdmitGateKeys did.
type KeyAdmission struct {
	// Changed: the history changed (a new key, a state moved on, a key
	// dropped); false when it already held exactly this set.
	Changed bool
	// Revision is the store revision the history was read or written at.
	Revision uint64
	// Keys is how many key IDs the history holds now.
	Keys int
}

// AdmitGateKeys records keys, the complete set of gate keys a gate-keys
// file is about to put in force, in store's key history (KeyHistory.Admit
// has the rule), by compare-and-swap on the history's contents: it
// returns nil only once the history the store holds admits keys, so the
// caller may then put them in force. A *KeyHistoryError (ErrKeyReused)
// says which keys the history refuses; nothing is written then. Two
// callers at once with conflicting sets (two replicas loading different
// files) cannot both succeed: the second's compare fails, it decides
// again on the first's history, and is refused.
func AdmitGateKeys(ctx context.Context, store Store, keys []GateKeyUse) (KeyAdmission, error) {
	slot, err := store.ReadKeyHistory(ctx)
	for try := 0; err == nil; try++ {
		next, changed, aerr := slot.History.Admit(keys)
		switch {
		case aerr != nil:
			return KeyAdmission{Revision: slot.Revision}, aerr
		case !changed:
			return KeyAdmission{Revision: slot.Revision, Keys: len(next.Keys)}, nil
		}
		res, cerr := store.CommitKeyHistory(ctx, KeyHistoryWrite{WasRaw: slot.Raw, History: next})
		switch {
		case cerr != nil:
			return KeyAdmission{}, storeError("commit key history", cerr)
		case res.OK:
			return KeyAdmission{Changed: true, Revision: res.Revision, Keys: len(next.Keys)}, nil
		case try >= keyHistoryRetriesMax:
			return KeyAdmission{}, fmt.Errorf("%w: gate key history: %d compare-and-swap retries", wire.ErrConflict, try)
		}
		slot = res.Current
	}
	return KeyAdmission{}, storeError("read key history", err)
}

// AdmitGateKeys is the package's AdmitGateKeys on the registry's store.
func (r *Registry) AdmitGateKeys(ctx context.Context, keys []GateKeyUse) (KeyAdmission, error) {
	return AdmitGateKeys(ctx, r.store, keys)
}

// ReadKeyHistory returns the gate key history the registry's store holds
// (nil when none was ever written).
func (r *Registry) ReadKeyHistory(ctx context.Context) (*KeyHistory, error) {
	slot, err := r.store.ReadKeyHistory(ctx)
	if err != nil {
		return nil, storeError("read key history", err)
	}
	return slot.History, nil
}
