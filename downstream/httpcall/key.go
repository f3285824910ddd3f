// Package httpcall calls a third-party HTTP API under a grant. A third
// party stores no fence, so it cannot refuse a superseded owner: its
// capability is at best effect query (gate.CapabilityEffectQuery), and it
// may only be used for idempotent, compensable narrow operations or
// behind a single writer (gate.CheckTarget refuses shadow and enforce
// mode). What this package adds is everything the caller's side can do:
//
//   - the call is first recorded as a fenced intent, a segment written
//     through the local gate (sqlgate) with its receipt, so a superseded
//     owner is refused before it sends anything (STALE_OWNER);
//   - the call carries an idempotency key derived from (resource, fence,
//     operation root, segment), stable across retries and processes, in
//     the Idempotency-Key header (configurable);
//   - an intent is sent once: a replayed intent is not sent again, and an
//     answer that never came (timeout, transport error, 5xx) is
//     MUTATION_UNKNOWN, resolved by the caller's effect query (GET by key
//     or by operation ID) — never by a call under another key. ACCEPTED:
//     reuse the effect. PROVEN_ABSENT: the key can no longer take effect,
//     so a newer fence may submit a new operation. UNDETERMINED:
//     reconcile by hand or by domain logic (compensate).
package httpcall

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/http"

	"github.com/fencegate/fencegate/grant"
)

// HeaderDefault is the header that carries the idempotency key.
const HeaderDefault = "Idempotency-Key"

// keyDomain separates idempotency keys from every other hash.
const keyDomain = "fencegate/idempotency-key/v1\x00"

// Key derives the idempotency key of one segment: "fg1-" and 64 hex
// digits of sha256 over (resource, fence, operation root, segment). The
// same segment always gets the same key, and every other segment (another
// fence above all) another.
func Key(resource string, fence uint64, root grant.Digest, seq uint64) string {
	h := sha256.New()
	h.Write([]byte(keyDomain))
	h.Write([]byte(resource))
	h.Write([]byte{0})
	var n [16]byte
	binary.BigEndian.PutUint64(n[:8], fence)
	binary.BigEndian.PutUint64(n[8:], seq)
	h.Write(n[:8])
	h.Write(root[:])
	h.Write(n[8:])
	return "fg1-" + hex.EncodeToString(h.Sum(nil))
}

// Request is the one HTTP call of a segment.
type Request struct {
	Method string
	URL    string
	Header http.Header // optional; the idempotency key header is set by Call
	Body   []byte
}

// Digest identifies the request (method, URL, body): the segment's
// payload digest must be it, so a replay with another request is
// QUARANTINED by the gate rather than sent.
func (r Request) Digest() grant.Digest {
	h := sha256.New()
	h.Write([]byte("fencegate/http-request/v1\x00" + r.Method + "\x00" + r.URL + "\x00"))
	h.Write(r.Body)
	var d grant.Digest
	copy(d[:], h.Sum(nil))
	return d
}
