package registry

import (
	"fmt"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// The key history's stored form is compact only (no JSON form ever
// existed): marker 0x83, then the entries as a list, each its key ID,
// gate, digest (the short form: 0x01 and 32 bytes) and state (one byte: 1
// active, 2 verify-only, 3 retired, 4 dropped), in key ID order. One
// value has one encoding, so content compares see equal histories as
// equal bytes.
const markKeyHistoryV1 = 0x83

var compactKeyStates = [...]grant.KeyState{1: grant.KeyActive, 2: grant.KeyVerifyOnly, 3: grant.KeyRetired, 4: KeyDropped}

// keyUseBytesMin is the least an entry takes: two one-byte strings, a
// short digest and a state.
const keyUseBytesMin = 2 + 2 + 33 + 1

// EncodeKeyHistory returns h's stored form.
func EncodeKeyHistory(h *KeyHistory) []byte {
	var keys []GateKeyUse
	if h != nil {
		keys = h.Keys
	}
	e := encoder{b: make([]byte, 0, 8+64*len(keys))}
	e.byte(markKeyHistoryV1)
	e.uint(uint64(len(keys)))
	for _, k := range keys {
		e.str(k.KeyID)
		e.str(k.Gate)
		e.digest(k.Digest)
		e.byte(compactKeyState(k.State))
	}
	return e.b
}

func compactKeyState(s grant.KeyState) byte {
	for i, st := range compactKeyStates {
		if i > 0 && st == s {
			return byte(i)
		}
	}
	return 0 // not a state: the decoder refuses it
}

// DecodeKeyHistory strictly decodes a stored key history: its form, each
// entry's fields (valid IDs and gate names, a digest, a state), strictly
// ascending key IDs, at most KeyHistoryBytesMax bytes. Anything else is
// wire.ErrCorrupt.
func DecodeKeyHistory(b []byte) (*KeyHistory, error) {
	h, err := decodeKeyHistory(b)
	if err != nil {
		return nil, fmt.Errorf("%w: gate key history: %v", wire.ErrCorrupt, err)
	}
	return h, nil
}

func decodeKeyHistory(b []byte) (*KeyHistory, error) {
	switch {
	case len(b) > KeyHistoryBytesMax:
		return nil, fmt.Errorf("%d bytes, limit %d", len(b), KeyHistoryBytesMax)
	case len(b) == 0 || b[0] != markKeyHistoryV1:
		return nil, fmt.Errorf("not the compact form (marker 0x%02x)", markKeyHistoryV1)
	}
	d := decoder{b: b[1:]}
	h := &KeyHistory{}
	if n := d.count(keyUseBytesMin); n > 0 {
		h.Keys = make([]GateKeyUse, n)
		for i := range h.Keys {
			h.Keys[i] = GateKeyUse{KeyID: d.str(), Gate: d.str(), Digest: d.digest()}
			if c := d.byte(); d.err == nil {
				if c == 0 || int(c) >= len(compactKeyStates) {
					d.fail(fmt.Errorf("state byte %d", c))
				} else {
					h.Keys[i].State = compactKeyStates[c]
				}
			}
		}
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	for i, k := range h.Keys {
		if err := k.check(); err != nil {
			return nil, err
		}
		if i > 0 && h.Keys[i-1].KeyID >= k.KeyID {
			return nil, fmt.Errorf("key %s after %s: not in ascending key ID order", k.KeyID, h.Keys[i-1].KeyID)
		}
	}
	return h, nil
}
