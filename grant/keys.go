package grant

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"github.com/fencegate/fencegate/internal/keptfile"
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

// KeyFileBytesMax bounds a key file, 4 KiB: a generated one is about 100
// bytes, and the bound leaves room for HMAC secrets of some 3,000 bytes.
const KeyFileBytesMax = 4096

// LoadKeyFile reads and parses a key file: a regular file (a symbolic
// link to one is followed) of at most KeyFileBytesMax bytes, read within
// keptfile.ReadTimeoutMs. A FIFO, device or directory is refused at once,
// naming the path.
func LoadKeyFile(path string) (*SigningKey, error) {
	return LoadKeyFileContext(context.Background(), path)
}

// LoadKeyFileContext is LoadKeyFile, also ending when ctx does.
func LoadKeyFileContext(ctx context.Context, path string) (*SigningKey, error) {
	b, err := keptfile.Read(ctx, path, KeyFileBytesMax)
	if err != nil {
		return nil, fmt.Errorf("grant: key file: %w", err)
	}
	return ParseKeyFile(b)
}

// secretDigestDomain separates SecretDigest's hash from every other use
// of SHA-256 over the same secret.
const secretDigestDomain = "fencegate.keySecretDigest.v1\x00"

// SecretDigest identifies the key's secret without revealing it:
// "sha256:" and the lowercase hex of SHA-256 over the domain string
// "fencegate.keySecretDigest.v1", a zero byte, and the secret (an HMAC
// secret, or an Ed25519 seed). Two keys with one digest hold one secret.
// The registry's key history and the gate inside PostgreSQL record it to
// refuse a key ID that comes back with another secret.
func (k *SigningKey) SecretDigest() string {
	h := sha256.New()
	h.Write([]byte(secretDigestDomain))
	h.Write(k.secret)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
