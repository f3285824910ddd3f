package grant

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/fencegate/fencegate/internal/strictjson"
)

// SigningKey signs grants and status proofs. It is held by the registry
// only (and, for HMAC keys, by gates as a verification secret).
type SigningKey struct {
	KeyID  string
	Alg    Alg
	secret []byte // Ed25519 seed or HMAC secret
	priv   ed25519.PrivateKey
}

// SecretBytes is the length of an Ed25519 seed and of a generated HMAC secret.
const SecretBytes = 32

// GenerateKey makes a new key with secret material from rand (crypto/rand
// in production; a fixed reader in golden tests).
func GenerateKey(alg Alg, keyID string, rand io.Reader) (*SigningKey, error) {
	secret := make([]byte, SecretBytes)
	if _, err := io.ReadFull(rand, secret); err != nil {
		return nil, fmt.Errorf("grant: generate key: %w", err)
	}
	return NewSigningKey(alg, keyID, secret)
}

// NewSigningKey builds a key from its secret: a 32-byte Ed25519 seed, or an
// HMAC secret of at least 32 bytes.
func NewSigningKey(alg Alg, keyID string, secret []byte) (*SigningKey, error) {
	if err := ValidateKeyID(keyID); err != nil {
		return nil, fmt.Errorf("%w: key ID: %v", ErrBadBundle, err)
	}
	k := &SigningKey{KeyID: keyID, Alg: alg, secret: bytes.Clone(secret)}
	switch alg {
	case AlgEd25519:
		if len(secret) != ed25519.SeedSize {
			return nil, fmt.Errorf("%w: ed25519 seed is %d bytes, want %d", ErrBadBundle, len(secret), ed25519.SeedSize)
		}
		k.priv = ed25519.NewKeyFromSeed(secret)
	case AlgHMACSHA256:
		if len(secret) < SecretBytes {
			return nil, fmt.Errorf("%w: hmac secret is %d bytes, want at least %d", ErrBadBundle, len(secret), SecretBytes)
		}
	default:
		return nil, fmt.Errorf("%w: unknown algorithm %q", ErrBadBundle, alg)
	}
	return k, nil
}

// PublicKey returns the Ed25519 public key, or nil for an HMAC key.
func (k *SigningKey) PublicKey() ed25519.PublicKey {
	if k.priv == nil {
		return nil
	}
	return k.priv.Public().(ed25519.PublicKey)
}

// Sign validates m and returns its proof text. It does not consult a trust
// bundle; the registry decides which key signs which epoch.
func (k *SigningKey) Sign(m Message) (string, error) {
	if err := m.Validate(); err != nil {
		return "", err
	}
	return k.signDigest(m.Schema(), m.Digest()).String(), nil
}

func (k *SigningKey) signDigest(schema string, d Digest) Proof {
	in := signingInput(schema, d)
	if k.Alg == AlgEd25519 {
		return Proof{Alg: k.Alg, KeyID: k.KeyID, Bytes: ed25519.Sign(k.priv, in)}
	}
	return Proof{Alg: k.Alg, KeyID: k.KeyID, Bytes: macSum(k.secret, in)}
}

func macSum(secret, in []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(in)
	return m.Sum(nil)
}

// keyFile is the on-disk form of a signing key: JSON, mode 0600. For an
// HMAC key the same file is what a trust bundle's secretFile names.
type keyFile struct {
	KeyID  string `json:"keyId"`
	Alg    Alg    `json:"alg"`
	Secret string `json:"secret"` // unpadded base64url
}

// MarshalKeyFile returns the key file bytes.
func (k *SigningKey) MarshalKeyFile() []byte {
	b, _ := json.MarshalIndent(keyFile{KeyID: k.KeyID, Alg: k.Alg, Secret: b64.EncodeToString(k.secret)}, "", "  ")
	return append(b, '\n')
}

// ParseKeyFile strictly parses key file bytes.
func ParseKeyFile(b []byte) (*SigningKey, error) {
	var f keyFile
	if err := strictjson.Decode(b, &f); err != nil {
		return nil, fmt.Errorf("%w: key file: %v", ErrBadBundle, err)
	}
	secret, err := b64.DecodeString(f.Secret)
	if err != nil {
		return nil, fmt.Errorf("%w: key file: secret: %v", ErrBadBundle, err)
	}
	return NewSigningKey(f.Alg, f.KeyID, secret)
}

// LoadKeyFile reads and parses a key file.
func LoadKeyFile(path string) (*SigningKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("grant: %w", err)
	}
	return ParseKeyFile(b)
}
