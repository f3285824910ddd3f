package grant

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// Alg is a proof algorithm. A trust-bundle key has exactly one.
type Alg string

// The supported algorithms. Ed25519 is the default: a gate holding only
// public keys cannot mint grants. HMAC-SHA256 shares one secret between the
// registry and every gate, so any gate could forge grants; use it only where
// gates are trusted as much as the registry.
const (
	AlgEd25519    Alg = "ed25519"
	AlgHMACSHA256 Alg = "hmac-sha256"
)

// proofPrefix is the proof-text prefix of each algorithm.
var proofPrefix = map[Alg]string{AlgEd25519: "sig", AlgHMACSHA256: "mac"}

// proofBytes is the raw proof length of each algorithm.
var proofBytes = map[Alg]int{AlgEd25519: ed25519.SignatureSize, AlgHMACSHA256: sha256.Size}

func parseAlg(s string) (Alg, error) {
	switch a := Alg(s); a {
	case AlgEd25519, AlgHMACSHA256:
		return a, nil
	}
	return "", fmt.Errorf("unknown algorithm %q (want ed25519 or hmac-sha256)", s)
}

// Proof is a parsed proof: "sig:<keyId>:<base64url>" for Ed25519 or
// "mac:<keyId>:<base64url>" for HMAC-SHA256, unpadded base64url.
type Proof struct {
	Alg   Alg
	KeyID string
	Bytes []byte
}

var b64 = base64.RawURLEncoding.Strict()

// String returns the canonical proof text.
func (p Proof) String() string {
	return proofPrefix[p.Alg] + ":" + p.KeyID + ":" + b64.EncodeToString(p.Bytes)
}

// ParseProof parses proof text strictly: known prefix, valid key ID,
// canonical unpadded base64url of exactly the algorithm's length. Errors
// wrap ErrMalformedProof.
func ParseProof(s string) (Proof, error) {
	fail := func(format string, args ...any) (Proof, error) {
		return Proof{}, fmt.Errorf("%w: %s", ErrMalformedProof, fmt.Sprintf(format, args...))
	}
	if len(s) > 256 {
		return fail("%d bytes", len(s))
	}
	prefix, rest, ok1 := strings.Cut(s, ":")
	keyID, enc, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 {
		return fail("want sig:<keyId>:<base64url> or mac:<keyId>:<base64url>")
	}
	var p Proof
	switch prefix {
	case "sig":
		p.Alg = AlgEd25519
	case "mac":
		p.Alg = AlgHMACSHA256
	default:
		return fail("unknown prefix %q", prefix)
	}
	if err := ValidateKeyID(keyID); err != nil {
		return fail("key ID: %v", err)
	}
	raw, err := b64.DecodeString(enc)
	if err != nil || b64.EncodeToString(raw) != enc {
		return fail("not canonical unpadded base64url")
	}
	if len(raw) != proofBytes[p.Alg] {
		return fail("%d bytes, want %d for %s", len(raw), proofBytes[p.Alg], p.Alg)
	}
	p.KeyID, p.Bytes = keyID, raw
	return p, nil
}

// Message is a signable message: *Grant or *Status. It is sealed; the
// schema name is the domain-separation tag.
type Message interface {
	Schema() string
	Encode() []byte
	Digest() Digest
	Epoch() uint64
	Validate() error
	sealed()
}

// proofDomain separates fencegate proofs from any other use of the keys.
const proofDomain = "fencegate/proof/v1\x00"

// signingInput is what is signed or MACed: the proof domain, the message's
// schema name (so a grant proof never verifies as a status proof or for any
// other message type), and the message digest.
func signingInput(schema string, d Digest) []byte {
	b := make([]byte, 0, len(proofDomain)+len(schema)+1+len(d))
	b = append(b, proofDomain...)
	b = append(b, schema...)
	b = append(b, 0)
	return append(b, d[:]...)
}

// groupOrder is L = 2^252 + 27742317777372353535851937790883648493, little
// endian, the order of the Ed25519 base point.
var groupOrder = [32]byte{
	0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
}

// scalarCanonical reports whether the little-endian scalar s is below L.
func scalarCanonical(s []byte) bool {
	for i := 31; i >= 0; i-- {
		if s[i] != groupOrder[i] {
			return s[i] < groupOrder[i]
		}
	}
	return false // s == L
}
