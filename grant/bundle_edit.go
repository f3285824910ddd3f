package grant

import "fmt"

// The edits below are what `fencegate keys bundle` does. Each validates,
// bumps Version by one and leaves the receiver unchanged on error.

// AddKey adds a new key entry.
func (f *BundleFile) AddKey(k BundleKey) error {
	next := *f
	next.Keys = append(append([]BundleKey(nil), f.Keys...), k)
	next.Version++
	if err := next.Validate(); err != nil {
		return err
	}
	*f = next
	return nil
}

// SetKeyState moves a key forward in its rotation (active → verify-only →
// retired). Moving backwards is refused: a retired key never comes back.
func (f *BundleFile) SetKeyState(keyID string, state KeyState) error {
	to, ok := keyStateRank[state]
	if !ok {
		return fmt.Errorf("%w: state %q", ErrBadBundle, state)
	}
	for i, k := range f.Keys {
		if k.KeyID != keyID {
			continue
		}
		if from := keyStateRank[k.State]; to <= from {
			return fmt.Errorf("%w: key %s: %s → %s goes backwards or nowhere", ErrBadBundle, keyID, k.State, state)
		}
		keys := append([]BundleKey(nil), f.Keys...)
		keys[i].State = state
		f.Keys = keys
		f.Version++
		return nil
	}
	return fmt.Errorf("%w: key %s", ErrUnknownKey, keyID)
}

// RevokeBelow revokes every issuer epoch below epoch. The line only rises.
func (f *BundleFile) RevokeBelow(epoch uint64) error {
	if epoch <= f.RevokedBelowEpoch {
		return fmt.Errorf("%w: revokedBelowEpoch is %d; it only rises", ErrBadBundle, f.RevokedBelowEpoch)
	}
	f.RevokedBelowEpoch = epoch
	f.Version++
	return nil
}
