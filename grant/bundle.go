package grant

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fencegate/fencegate/internal/strictjson"
)

// KeyState is a trust-bundle key's place in its rotation:
// active → verify-only → retired, never backwards.
type KeyState string

// Key states. Rotation is add (active) → overlap (the old key verify-only
// while the new one signs) → retire (the old key's proofs are rejected).
const (
	KeyActive     KeyState = "active"      // signs and verifies
	KeyVerifyOnly KeyState = "verify-only" // verifies, no longer signs
	KeyRetired    KeyState = "retired"     // its proofs are rejected
)

var keyStateRank = map[KeyState]int{KeyActive: 0, KeyVerifyOnly: 1, KeyRetired: 2}

// BundleKey is one key entry of the trust bundle file.
type BundleKey struct {
	KeyID      string   `json:"keyId"`
	Alg        Alg      `json:"alg"`
	PublicKey  string   `json:"publicKey,omitempty"`  // ed25519: unpadded base64url
	SecretFile string   `json:"secretFile,omitempty"` // hmac-sha256: key file path, relative to the bundle
	MinEpoch   uint64   `json:"minEpoch"`             // lowest issuer epoch it may sign, >= 1
	MaxEpoch   uint64   `json:"maxEpoch"`             // highest; 0 means no upper bound
	State      KeyState `json:"state"`
}

// BundleFile is the JSON form of a trust bundle. Epochs below
// RevokedBelowEpoch are revoked: their messages never verify.
type BundleFile struct {
	Version           uint64      `json:"version"` // >= 1; only a higher version replaces a loaded bundle
	RevokedBelowEpoch uint64      `json:"revokedBelowEpoch"`
	Keys              []BundleKey `json:"keys"`
}

// Bundle is a loaded, validated trust bundle with key material resolved.
// It is immutable.
type Bundle struct {
	file BundleFile
	keys map[string]*trustedKey
}

type trustedKey struct {
	BundleKey
	pub         ed25519.PublicKey
	secret      []byte
	fingerprint [32]byte // identifies the key material in the verify cache
}

// Version returns the bundle version.
func (b *Bundle) Version() uint64 { return b.file.Version }

// File returns a copy of the bundle's file form.
func (b *Bundle) File() BundleFile {
	f := b.file
	f.Keys = slices.Clone(f.Keys)
	return f
}

// LoadBundle reads a bundle file; MAC secret files resolve against its folder.
func LoadBundle(path string) (*Bundle, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadBundle, err)
	}
	return ParseBundle(data, filepath.Dir(path))
}

// ParseBundle strictly parses bundle JSON (unknown fields rejected) and
// resolves each hmac-sha256 key's secret file relative to dir.
func ParseBundle(data []byte, dir string) (*Bundle, error) {
	var f BundleFile
	if err := strictjson.Decode(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadBundle, err)
	}
	return NewBundle(f, dir)
}

// NewBundle validates f and resolves its key material.
func NewBundle(f BundleFile, dir string) (*Bundle, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	b := &Bundle{file: f, keys: make(map[string]*trustedKey, len(f.Keys))}
	b.file.Keys = slices.Clone(f.Keys)
	for _, k := range f.Keys {
		tk, err := resolveKey(k, dir)
		if err != nil {
			return nil, err
		}
		b.keys[k.KeyID] = tk
	}
	return b, nil
}

func resolveKey(k BundleKey, dir string) (*trustedKey, error) {
	tk := &trustedKey{BundleKey: k}
	if k.Alg == AlgEd25519 {
		pub, err := b64.DecodeString(k.PublicKey)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("%w: key %s: publicKey must be %d bytes of unpadded base64url", ErrBadBundle, k.KeyID, ed25519.PublicKeySize)
		}
		tk.pub = pub
		tk.fingerprint = sha256.Sum256(append([]byte("ed25519\x00"), pub...))
		return tk, nil
	}
	path := k.SecretFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	sk, err := LoadKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: key %s: secretFile: %v", ErrBadBundle, k.KeyID, err)
	}
	if sk.KeyID != k.KeyID || sk.Alg != k.Alg {
		return nil, fmt.Errorf("%w: key %s: secretFile holds key %s (%s)", ErrBadBundle, k.KeyID, sk.KeyID, sk.Alg)
	}
	tk.secret = sk.secret
	tk.fingerprint = sha256.Sum256(append([]byte("hmac-sha256\x00"), sk.secret...))
	return tk, nil
}

// Validate checks the file form without touching key material.
func (f *BundleFile) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadBundle, fmt.Sprintf(format, args...))
	}
	if f.Version == 0 {
		return bad("version must be at least 1")
	}
	seen := map[string]bool{}
	for i, k := range f.Keys {
		if err := ValidateKeyID(k.KeyID); err != nil {
			return bad("keys[%d]: keyId: %v", i, err)
		}
		if seen[k.KeyID] {
			return bad("keys[%d]: duplicate keyId %s", i, k.KeyID)
		}
		seen[k.KeyID] = true
		if _, err := parseAlg(string(k.Alg)); err != nil {
			return bad("key %s: %v", k.KeyID, err)
		}
		if (k.Alg == AlgEd25519) != (k.PublicKey != "") || (k.Alg == AlgHMACSHA256) != (k.SecretFile != "") {
			return bad("key %s: ed25519 keys need publicKey only, hmac-sha256 keys secretFile only", k.KeyID)
		}
		if _, ok := keyStateRank[k.State]; !ok {
			return bad("key %s: state %q (want active, verify-only or retired)", k.KeyID, k.State)
		}
		if k.MinEpoch == 0 || k.MaxEpoch != 0 && k.MaxEpoch < k.MinEpoch {
			return bad("key %s: epochs [%d, %d] (minEpoch >= 1; maxEpoch 0 or >= minEpoch)", k.KeyID, k.MinEpoch, k.MaxEpoch)
		}
	}
	return nil
}

// Marshal returns the indented JSON form, keys sorted by ID.
func (f BundleFile) Marshal() []byte {
	f.Keys = slices.Clone(f.Keys)
	slices.SortFunc(f.Keys, func(a, b BundleKey) int { return strings.Compare(a.KeyID, b.KeyID) })
	out, _ := json.MarshalIndent(f, "", "  ")
	return append(out, '\n')
}

// EncodeKey returns the bundle's text form of a public key: unpadded
// base64url.
func EncodeKey(pub ed25519.PublicKey) string { return b64.EncodeToString(pub) }
