package gate

import (
	"crypto/sha256"

	"github.com/fencegate/fencegate/grant"
)

// DigestPayload is the digest an envelope carries for a write whose
// payload is b: SHA-256 over b's bytes, as `fencegate envelope
// --payload-file` computes it. The gate sees only the digest; a service
// must check that what it is about to write has it (or a copy of a valid
// envelope could carry another write). Pass the bytes that say what the
// write does — the request body, or the values an own-database write
// sets — so that a replay with another payload is QUARANTINED, never
// applied.
func DigestPayload(b []byte) grant.Digest { return sha256.Sum256(b) }
