package registry

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fencegate/fencegate/grant"
)

// A key ID is used once, forever. The registry keeps, in its store, every
// gate key ID it has ever put in force (serve --gate-keys): the gate that
// held it, its secret's digest (grant.SigningKey.SecretDigest, never the
// secret) and the furthest state it reached, active → verify-only →
// retired → dropped (no longer in the gate-keys file). A gate-keys file is
// put in force only if, for every key it names, the history has no entry
// for the ID or an entry of the same gate and digest whose state the
// file's does not move back, and no key it names was dropped; every key
// in the history it does not name becomes dropped. The history lives in
// the store, so a restart and every replica sharing the store check
// against one history, and it changes only by compare-and-swap on its
// contents, so two replicas loading at once cannot both put conflicting
// files in force.

// KeyDropped is a gate key's state in the history once a gate-keys file
// put in force no longer names it. It is final: the ID never comes back.
const KeyDropped grant.KeyState = "dropped"

// KeyHistoryBytesMax bounds the stored history, 768 KiB: below
// ZooKeeper's default 1 MiB request limit (jute.maxbuffer) and etcd's
// 1.5 MiB, with room for the transaction around it. An entry takes 36
// bytes plus its key ID and gate name (at most 164), so the bound holds
// at least 4,795 key IDs, some 12,000 of typical length. A file whose
// history would outgrow it is refused (KEY_HISTORY_FULL).
const KeyHistoryBytesMax = 768 << 10

// GateKeyUse is one gate key in the history, or as a gate-keys file puts
// it in force.
type GateKeyUse struct {
	KeyID  string         `json:"keyId"`  // grant.ValidateKeyID rules; unique across gates
	Gate   string         `json:"gate"`   // the gate that holds it (grant.ValidateKeyID rules)
	Digest string         `json:"digest"` // grant.SigningKey.SecretDigest: "sha256:" and 64 hex digits
	State  grant.KeyState `json:"state"`  // active, verify-only, retired; or, in the history, dropped
}

// KeyHistory is every gate key ID the registry has put in force, in key
// ID order, each once. The zero value (and nil) is the empty history.
type KeyHistory struct {
	Keys []GateKeyUse
}

// Stable codes of a key refused by the history (KeyRefusal.Code).
const (
	// KeyCodeOtherSecret: the ID was loaded before with another secret.
	KeyCodeOtherSecret = "KEY_OTHER_SECRET"
	// KeyCodeDropped: the ID was dropped from an earlier file.
	KeyCodeDropped = "KEY_DROPPED"
	// KeyCodeStateBack: the key's state moves back (retired → anything,
	// verify-only → active).
	KeyCodeStateBack = "KEY_STATE_BACK"
	// KeyCodeOtherGate: the ID was another gate's.
	KeyCodeOtherGate = "KEY_OTHER_GATE"
	// KeyCodeHistoryFull: the history would exceed KeyHistoryBytesMax.
	KeyCodeHistoryFull = "KEY_HISTORY_FULL"
)

// ErrKeyReused is wrapped by every KeyHistoryError.
var ErrKeyReused = errors.New("registry: gate key refused by the key history (a key ID is used once, forever)")

// KeyRefusal is one key a gate-keys file may not put in force.
type KeyRefusal struct {
	KeyID, Gate string
	Code        string // KeyCode*
	Detail      string // what happened before and what to do
}

// KeyHistoryError lists every key refused, in key ID order.
type KeyHistoryError struct {
	Refusals []KeyRefusal
}

// keyRefusalsShown bounds the refusals an error message spells out.
const keyRefusalsShown = 8

func (e *KeyHistoryError) Error() string {
	var b strings.Builder
	b.WriteString("registry: gate key history refuses the gate keys (a key ID is used once, forever):")
	for i, r := range e.Refusals {
		if i == keyRefusalsShown {
			fmt.Fprintf(&b, "; and %d more", len(e.Refusals)-i)
			break
		}
		if r.KeyID != "" {
			fmt.Fprintf(&b, " key %s (gate %s):", r.KeyID, r.Gate)
		}
		fmt.Fprintf(&b, " %s: %s;", r.Code, r.Detail)
	}
	return strings.TrimSuffix(b.String(), ";")
}

// Unwrap makes a KeyHistoryError ErrKeyReused.
func (e *KeyHistoryError) Unwrap() error { return ErrKeyReused }

// keyRank orders the states: a key's state never moves to a lower rank.
func keyRank(s grant.KeyState) int {
	switch s {
	case grant.KeyActive:
		return 0
	case grant.KeyVerifyOnly:
		return 1
	case grant.KeyRetired:
		return 2
	case KeyDropped:
		return 3
	}
	return -1
}

// Admit returns the history once keys, the complete set of gate keys a
// file puts in force, are: each key's entry as keys has it, and every
// other entry dropped. changed reports whether it differs from h. It
// refuses (a *KeyHistoryError, listing every key refused) a key whose ID
// h holds for another gate or with another secret digest, or dropped, or
// in a later state than keys gives it; and a history that would exceed
// KeyHistoryBytesMax. keys must name valid IDs, gates, digests and
// states (active, verify-only, retired), each ID once; any order.
func (h *KeyHistory) Admit(keys []GateKeyUse) (next *KeyHistory, changed bool, err error) {
	in, err := checkKeyUses(keys)
	if err != nil {
		return nil, false, err
	}
	var old []GateKeyUse
	if h != nil {
		old = h.Keys
	}
	out := make([]GateKeyUse, 0, len(old)+len(in))
	var refused []KeyRefusal
	i, j := 0, 0
	for i < len(old) || j < len(in) {
		switch {
		case j == len(in) || i < len(old) && old[i].KeyID < in[j].KeyID:
			o := old[i]
			changed = changed || o.State != KeyDropped
			o.State = KeyDropped
			out = append(out, o)
			i++
		case i == len(old) || in[j].KeyID < old[i].KeyID:
			out = append(out, in[j])
			changed = true
			j++
		default:
			if r, ok := refuseKey(old[i], in[j]); ok {
				refused = append(refused, r)
			}
			changed = changed || old[i].State != in[j].State
			out = append(out, in[j])
			i++
			j++
		}
	}
	if len(refused) > 0 {
		return nil, false, &KeyHistoryError{Refusals: refused}
	}
	next = &KeyHistory{Keys: out}
	if n := len(EncodeKeyHistory(next)); n > KeyHistoryBytesMax {
		return nil, false, &KeyHistoryError{Refusals: []KeyRefusal{{Code: KeyCodeHistoryFull,
			Detail: fmt.Sprintf("the history would hold %d key IDs in %d bytes, limit %d: the file names new keys the store cannot remember", len(out), n, KeyHistoryBytesMax)}}}
	}
	return next, changed, nil
}

// refuseKey judges a key the history holds (was) coming back as now.
func refuseKey(was, now GateKeyUse) (KeyRefusal, bool) {
	r := KeyRefusal{KeyID: now.KeyID, Gate: now.Gate}
	newID := "give the new key a new ID (fencegate keys gen --id NEW)"
	switch {
	case was.Gate != now.Gate:
		r.Code, r.Detail = KeyCodeOtherGate, fmt.Sprintf("the ID was gate %s's; every gate has keys of its own: %s", was.Gate, newID)
	case was.Digest != now.Digest:
		r.Code, r.Detail = KeyCodeOtherSecret, fmt.Sprintf("the ID was loaded with another secret (%s, now %s): a new secret needs a new ID: %s", was.Digest, now.Digest, newID)
	case was.State == KeyDropped:
		r.Code, r.Detail = KeyCodeDropped, "the ID was dropped from the gate keys earlier and never comes back: remove it from the file, or "+newID
	case keyRank(now.State) < keyRank(was.State):
		r.Code, r.Detail = KeyCodeStateBack, fmt.Sprintf("state %s → %s moves back (active → verify-only → retired only): keep it %s or later, or %s", was.State, now.State, was.State, newID)
	default:
		return r, false
	}
	return r, true
}

// checkKeyUses validates keys as Admit takes them and returns them in key
// ID order.
func checkKeyUses(keys []GateKeyUse) ([]GateKeyUse, error) {
	in := slices.Clone(keys)
	slices.SortFunc(in, func(a, b GateKeyUse) int { return strings.Compare(a.KeyID, b.KeyID) })
	for i, k := range in {
		if err := k.check(); err != nil {
			return nil, err
		}
		if k.State == KeyDropped {
			return nil, fmt.Errorf("registry: gate key %s: state dropped is the history's, not a file's", k.KeyID)
		}
		if i > 0 && in[i-1].KeyID == k.KeyID {
			return nil, fmt.Errorf("registry: gate key %s named twice", k.KeyID)
		}
	}
	return in, nil
}

// check validates one entry's fields.
func (k GateKeyUse) check() error {
	if err := grant.ValidateKeyID(k.KeyID); err != nil {
		return fmt.Errorf("registry: gate key ID %q: %v", k.KeyID, err)
	}
	if err := grant.ValidateKeyID(k.Gate); err != nil {
		return fmt.Errorf("registry: gate key %s: gate %q: %v", k.KeyID, k.Gate, err)
	}
	if !isShortDigest(k.Digest) {
		return fmt.Errorf("registry: gate key %s: digest %q: want sha256: and 64 lowercase hex digits", k.KeyID, k.Digest)
	}
	if keyRank(k.State) < 0 {
		return fmt.Errorf("registry: gate key %s: state %q: want active, verify-only, retired or dropped", k.KeyID, k.State)
	}
	return nil
}

// Lookup returns the history's entry for keyID.
func (h *KeyHistory) Lookup(keyID string) (GateKeyUse, bool) {
	if h == nil {
		return GateKeyUse{}, false
	}
	i, ok := slices.BinarySearchFunc(h.Keys, keyID, func(k GateKeyUse, id string) int { return strings.Compare(k.KeyID, id) })
	if !ok {
		return GateKeyUse{}, false
	}
	return h.Keys[i], true
}

// merge returns h with keys (entries of another store's history, each ID
// once, valid) merged in, never lowering anything: an ID h lacks is added,
// one it has takes the later of the two states. counts says which. It
// refuses (a *KeyHistoryError) an ID the two hold for other gates or
// secrets, and a history that would exceed KeyHistoryBytesMax.
func (h *KeyHistory) merge(keys []GateKeyUse) (*KeyHistory, ImportCounts, error) {
	var counts ImportCounts
	next := &KeyHistory{}
	if h != nil {
		next.Keys = slices.Clone(h.Keys)
	}
	var refused []KeyRefusal
	for _, k := range keys {
		i, found := slices.BinarySearchFunc(next.Keys, k.KeyID, func(e GateKeyUse, id string) int { return strings.Compare(e.KeyID, id) })
		switch {
		case !found:
			next.Keys = slices.Insert(next.Keys, i, k)
			counts.Added++
		case next.Keys[i].Gate != k.Gate || next.Keys[i].Digest != k.Digest:
			r, _ := refuseKey(next.Keys[i], GateKeyUse{KeyID: k.KeyID, Gate: k.Gate, Digest: k.Digest, State: KeyDropped})
			refused = append(refused, r)
		case keyRank(k.State) > keyRank(next.Keys[i].State):
			next.Keys[i].State = k.State
			counts.Raised++
		case k.State == next.Keys[i].State:
			counts.Same++
		default:
			counts.Kept++
		}
	}
	if len(refused) > 0 {
		return nil, counts, &KeyHistoryError{Refusals: refused}
	}
	if n := len(EncodeKeyHistory(next)); n > KeyHistoryBytesMax {
		return nil, counts, &KeyHistoryError{Refusals: []KeyRefusal{{Code: KeyCodeHistoryFull,
			Detail: fmt.Sprintf("the merged history would hold %d key IDs in %d bytes, limit %d", len(next.Keys), n, KeyHistoryBytesMax)}}}
	}
	return next, counts, nil
}
