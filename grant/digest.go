package grant

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
)

// Digest is a SHA-256 digest. Its text form is "sha256:" followed by 64
// lowercase hex digits; no other form is accepted.
type Digest [sha256.Size]byte

const digestPrefix = "sha256:"

// String returns the canonical text form.
func (d Digest) String() string { return digestPrefix + hex.EncodeToString(d[:]) }

// IsZero reports whether d is the all-zero digest (never a real digest).
func (d Digest) IsZero() bool { return d == Digest{} }

// ParseDigest parses the canonical text form, rejecting upper-case hex,
// other prefixes and wrong lengths.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	if len(s) != len(digestPrefix)+2*sha256.Size || s[:len(digestPrefix)] != digestPrefix {
		return d, errors.New("want sha256: followed by 64 lowercase hex digits")
	}
	for i := len(digestPrefix); i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return d, errors.New("want lowercase hex digits")
		}
	}
	hex.Decode(d[:], []byte(s[len(digestPrefix):]))
	return d, nil
}

// operationRootDomain separates operation roots from every other hash.
const operationRootDomain = "fencegate/operationRoot/v1\x00"

// OperationRoot returns sha256 over (resource, operationID). Each string is
// framed by its length as 8 big-endian bytes, so no two different pairs
// share a root ("a/b"+"c" and "a"+"b/c" hash differently). Callers validate
// both with ValidateResource and ValidateOperationID first.
func OperationRoot(resource, operationID string) Digest {
	h := sha256.New()
	var n [8]byte
	h.Write([]byte(operationRootDomain))
	binary.BigEndian.PutUint64(n[:], uint64(len(resource)))
	h.Write(n[:])
	h.Write([]byte(resource))
	binary.BigEndian.PutUint64(n[:], uint64(len(operationID)))
	h.Write(n[:])
	h.Write([]byte(operationID))
	var d Digest
	h.Sum(d[:0])
	return d
}
