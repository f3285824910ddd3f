package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/keptfile"
	"github.com/fencegate/fencegate/internal/strictjson"
	"github.com/fencegate/fencegate/registry"
)

// SchemaGateKeys names the gate-keys file form.
const SchemaGateKeys = "gateKeys.v1"

// Named limits of a gate-keys file.
const (
	// GateKeysFileBytesMax bounds the file, 1 MiB (secrets live in their
	// own key files, so this is names and patterns only).
	GateKeysFileBytesMax = 1 << 20
	// GatesMax bounds the gates one registry enrolls.
	GatesMax = 4096
	// GateKeysPerGateMax bounds one gate's keys (a rotation needs two or
	// three; retired ones may be dropped from the file).
	GateKeysPerGateMax = 16
)

// ErrBadGateKeys is wrapped by every reason a gate-keys file is refused.
var ErrBadGateKeys = errors.New("httpapi: bad gate keys")

// GateKeysForm is the JSON form of a gate-keys file: which gates the
// registry enrolls, the resources each protects, and each gate's own
// HMAC-SHA256 keys as a trust bundle lists keys. Secrets are never in it:
// each key names its key file (fencegate keys gen --alg hmac-sha256),
// relative to the gate-keys file.
//
//	{"schema": "gateKeys.v1", "gates": [
//	  {"gate": "ledger-db", "resources": ["ledger/*"], "keys": [
//	    {"keyId": "ledger-db-2", "secretFile": "ledger-db-2.key", "minEpoch": 1, "maxEpoch": 0, "state": "active"},
//	    {"keyId": "ledger-db-1", "secretFile": "ledger-db-1.key", "minEpoch": 1, "maxEpoch": 0, "state": "verify-only"}]}]}
type GateKeysForm struct {
	Schema string     `json:"schema"`
	Gates  []GateForm `json:"gates"`
}

// GateForm is one enrolled gate.
type GateForm struct {
	Gate string `json:"gate"` // the gate's name (grant.ValidateKeyID rules)
	// Resources are the gate's resource patterns, as a resource policy
	// writes them: an exact resource, "prefix*", or "*".
	Resources []string `json:"resources"`
	// Keys are the gate's HMAC-SHA256 keys; the one active key whose
	// epochs cover the registry's issuer epoch makes its proofs.
	Keys []GateKeyForm `json:"keys"`
}

// GateKeyForm is one key of a gate: a trust-bundle key entry
// (grant.BundleKey) without the algorithm, which is always hmac-sha256.
type GateKeyForm struct {
	KeyID      string         `json:"keyId"`      // unique in the whole file
	SecretFile string         `json:"secretFile"` // key file path, relative to the gate-keys file
	MinEpoch   uint64         `json:"minEpoch"`   // >= 1
	MaxEpoch   uint64         `json:"maxEpoch"`   // 0: no upper bound
	State      grant.KeyState `json:"state"`      // active, verify-only or retired
}

// Marshal returns the indented JSON form, gates sorted by name.
func (f GateKeysForm) Marshal() []byte {
	f.Gates = slices.Clone(f.Gates)
	slices.SortFunc(f.Gates, func(a, b GateForm) int { return strings.Compare(a.Gate, b.Gate) })
	out, _ := json.MarshalIndent(f, "", "  ")
	return append(out, '\n')
}

// ParseGateKeysForm strictly decodes a gate-keys file and validates its
// form (not the key files).
func ParseGateKeysForm(b []byte) (GateKeysForm, error) {
	var f GateKeysForm
	if len(b) > GateKeysFileBytesMax {
		return f, fmt.Errorf("%w: %d bytes, limit %d", ErrBadGateKeys, len(b), GateKeysFileBytesMax)
	}
	if err := strictjson.Decode(b, &f); err != nil {
		return f, fmt.Errorf("%w: %v", ErrBadGateKeys, err)
	}
	return f, f.Validate()
}

// Validate checks the form: the schema; at most GatesMax gates, each
// named once; at least one valid resource pattern per gate; 1 to
// GateKeysPerGateMax keys per gate, every key ID once in the file (a
// gate picks its proof by key ID), valid states and epochs, and at most
// one active key per gate (the one that makes its proofs).
func (f GateKeysForm) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadGateKeys, fmt.Sprintf(format, args...))
	}
	if f.Schema != SchemaGateKeys {
		return bad("schema %q, want %q", f.Schema, SchemaGateKeys)
	}
	if len(f.Gates) > GatesMax {
		return bad("%d gates, limit %d", len(f.Gates), GatesMax)
	}
	gates, keys := map[string]bool{}, map[string]bool{}
	for i, g := range f.Gates {
		if err := grant.ValidateKeyID(g.Gate); err != nil {
			return bad("gates[%d]: gate: %v", i, err)
		}
		if gates[g.Gate] {
			return bad("gate %s named twice", g.Gate)
		}
		gates[g.Gate] = true
		if err := validateGate(g, keys); err != nil {
			return bad("gate %s: %v", g.Gate, err)
		}
	}
	return nil
}

func validateGate(g GateForm, keys map[string]bool) error {
	if len(g.Resources) == 0 {
		return errors.New("no resources: name the resource patterns the gate protects")
	}
	if _, err := compilePatterns("resource", g.Resources, resourcePattern); err != nil {
		return err
	}
	if len(g.Keys) == 0 || len(g.Keys) > GateKeysPerGateMax {
		return fmt.Errorf("%d keys, want 1 to %d", len(g.Keys), GateKeysPerGateMax)
	}
	active := 0
	for _, k := range g.Keys {
		bk := grant.BundleKey{KeyID: k.KeyID, Alg: grant.AlgHMACSHA256, SecretFile: k.SecretFile, MinEpoch: k.MinEpoch, MaxEpoch: k.MaxEpoch, State: k.State}
		if err := (&grant.BundleFile{Version: 1, Keys: []grant.BundleKey{bk}}).Validate(); err != nil {
			return err
		}
		if keys[k.KeyID] {
			return fmt.Errorf("key %s appears twice in the file (key IDs are unique across gates)", k.KeyID)
		}
		keys[k.KeyID] = true
		if k.State == grant.KeyActive {
			active++
		}
	}
	if active > 1 {
		return fmt.Errorf("%d active keys: one signs; move the old one to verify-only", active)
	}
	return nil
}

// GateKeys is a loaded gate-keys file: every gate's patterns and key
// material. It is immutable and never prints a secret.
type GateKeys struct {
	form  GateKeysForm
	gates []loadedGate // sorted by name
	sum   [sha256.Size]byte
	// material identifies what the keys in force were loaded from: the
	// file's bytes and each key file's key ID and secret digest, so a
	// key file rewritten in place is a change though the file is not.
	material [sha256.Size]byte
}

type loadedGate struct {
	name      string
	resources []pattern
	keys      []loadedGateKey
}

type loadedGateKey struct {
	GateKeyForm
	signer *grant.SigningKey
	path   string      // the key file, as opened
	info   os.FileInfo // its status when read (keptfile.ReadInfo)
}

// ParseGateKeys parses a gate-keys file and reads its key files, relative
// to dir. Every key file must hold an hmac-sha256 key of the ID its entry
// names, and is read as grant.LoadKeyFile reads (a regular file of at
// most grant.KeyFileBytesMax bytes, within a time limit).
func ParseGateKeys(b []byte, dir string) (*GateKeys, error) {
	return ParseGateKeysContext(context.Background(), b, dir)
}

// ParseGateKeysContext is ParseGateKeys, its key file reads also ending
// when ctx does.
func ParseGateKeysContext(ctx context.Context, b []byte, dir string) (*GateKeys, error) {
	f, err := ParseGateKeysForm(b)
	if err != nil {
		return nil, err
	}
	gk := &GateKeys{form: f, sum: sha256.Sum256(b)}
	material := sha256.New()
	material.Write(gk.sum[:])
	for _, g := range f.Gates {
		lg := loadedGate{name: g.Gate}
		lg.resources, _ = compilePatterns("resource", g.Resources, resourcePattern) // checked by Validate
		for _, k := range g.Keys {
			lk, err := loadGateKey(ctx, k, dir)
			if err != nil {
				return nil, fmt.Errorf("%w: gate %s: %w", ErrBadGateKeys, g.Gate, err)
			}
			fmt.Fprintf(material, "%s\x00%s\x00", lk.signer.KeyID, lk.signer.SecretDigest())
			lg.keys = append(lg.keys, lk)
		}
		gk.gates = append(gk.gates, lg)
	}
	material.Sum(gk.material[:0])
	slices.SortFunc(gk.gates, func(a, b loadedGate) int { return strings.Compare(a.name, b.name) })
	return gk, nil
}

// loadGateKey reads k's key file (relative to dir) as grant.LoadKeyFile
// does, keeping its status for keyFilesUnchanged.
func loadGateKey(ctx context.Context, k GateKeyForm, dir string) (loadedGateKey, error) {
	lk := loadedGateKey{GateKeyForm: k, path: k.SecretFile}
	if !filepath.IsAbs(lk.path) {
		lk.path = filepath.Join(dir, lk.path)
	}
	b, info, err := keptfile.ReadInfo(ctx, lk.path, grant.KeyFileBytesMax)
	if err != nil {
		return lk, fmt.Errorf("key %s: secretFile: %w", k.KeyID, err)
	}
	sk, err := grant.ParseKeyFile(b)
	if err != nil {
		return lk, fmt.Errorf("key %s: secretFile %s: %w", k.KeyID, lk.path, err)
	}
	if sk.KeyID != k.KeyID || sk.Alg != grant.AlgHMACSHA256 {
		return lk, fmt.Errorf("key %s: secretFile holds key %s (%s), want hmac-sha256 %s", k.KeyID, sk.KeyID, sk.Alg, k.KeyID)
	}
	lk.signer, lk.info = sk, info
	return lk, nil
}

// keyFilesUnchanged reports whether every key file's status is as it was
// when read (keptfile.Unchanged): the cheap check a poll makes before
// reading them all again.
func (gk *GateKeys) keyFilesUnchanged() bool {
	for _, g := range gk.gates {
		for _, k := range g.keys {
			if !keptfile.Unchanged(k.path, k.info) {
				return false
			}
		}
	}
	return true
}

// Form returns the file form (no secrets).
func (gk *GateKeys) Form() GateKeysForm { return gk.form }

// Gates returns how many gates are enrolled.
func (gk *GateKeys) Gates() int { return len(gk.gates) }

// Uses returns every key of every gate as the registry's key history
// records it (registry.AdmitGateKeys): ID, gate, secret digest and state.
func (gk *GateKeys) Uses() []registry.GateKeyUse {
	var out []registry.GateKeyUse
	for _, g := range gk.gates {
		for _, k := range g.keys {
			out = append(out, registry.GateKeyUse{KeyID: k.KeyID, Gate: g.name, Digest: k.signer.SecretDigest(), State: k.State})
		}
	}
	return out
}

// Digest identifies the file's bytes (which hold no secret), for logs.
func (gk *GateKeys) Digest() string { return "sha256:" + hex.EncodeToString(gk.sum[:]) }

// GateProofs implements registry.GateProver: for each gate, in name
// order, whose patterns cover resource and that has an active key for
// g's issuer epoch, that key's MAC over g and over status (when not
// nil); at most grant.GateProofsMax gates, the first by name. A gate
// without such a key (all retired or verify-only: revoked at the
// registry) gets no proof.
func (gk *GateKeys) GateProofs(resource string, g, status grant.Message) ([]grant.GateProof, error) {
	var out []grant.GateProof
	for i := range gk.gates {
		lg := &gk.gates[i]
		if len(out) == grant.GateProofsMax || !matchAny(lg.resources, resource) {
			continue
		}
		sk := lg.signer(g.Epoch())
		if sk == nil {
			continue
		}
		p := grant.GateProof{Gate: lg.name}
		var err error
		if p.GrantProof, err = sk.Sign(g); err != nil {
			return nil, err
		}
		if status != nil {
			if p.StatusProof, err = sk.Sign(status); err != nil {
				return nil, err
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// signer is the gate's active key allowed to sign epoch, or nil.
func (lg *loadedGate) signer(epoch uint64) *grant.SigningKey {
	for _, k := range lg.keys {
		if k.State == grant.KeyActive && epoch >= k.MinEpoch && (k.MaxEpoch == 0 || epoch <= k.MaxEpoch) {
			return k.signer
		}
	}
	return nil
}

// CheckSuccessor refuses next as the successor of gk when it would undo a
// rotation step: a key ID kept must keep its key material, and its state
// never moves back (active → verify-only → retired), so a retired key
// never signs again. Dropping a key or a gate is allowed (the registry
// stops making its proofs; the gate revokes on its side).
func (gk *GateKeys) CheckSuccessor(next *GateKeys) error {
	rank := map[grant.KeyState]int{grant.KeyActive: 0, grant.KeyVerifyOnly: 1, grant.KeyRetired: 2}
	old := map[string]loadedGateKey{}
	for _, g := range gk.gates {
		for _, k := range g.keys {
			old[k.KeyID] = k
		}
	}
	for _, g := range next.gates {
		for _, k := range g.keys {
			o, ok := old[k.KeyID]
			switch {
			case !ok:
			case subtle.ConstantTimeCompare(o.signer.MarshalKeyFile(), k.signer.MarshalKeyFile()) != 1:
				return fmt.Errorf("%w: key %s: its key material changed (a new secret needs a new key ID)", ErrBadGateKeys, k.KeyID)
			case rank[k.State] < rank[o.State]:
				return fmt.Errorf("%w: key %s: state %s → %s moves back (active → verify-only → retired only)", ErrBadGateKeys, k.KeyID, o.State, k.State)
			}
		}
	}
	return nil
}
