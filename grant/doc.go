// Package grant defines fencegate's signed messages and how they are
// checked: lockGrant.v1 (a registry's grant of a lease with a fence token),
// grantStatus.v1 (a short-lived statement of a grant's state), their one
// canonical byte encoding and digest, Ed25519 and HMAC-SHA256 proofs with
// per-message-type domain separation, and the trust bundle that tells a
// gate which keys to believe for which issuer epochs.
//
// It depends on no other fencegate package; the registry, client, gate and
// simulator all build on it.
//
// # Encoding
//
// A message is one "name: value\n" line per field, in a fixed order, every
// field present. The parser accepts exactly the bytes the encoder produces
// and nothing else, so Encode(Parse(b)) == b, and the digest
// ("sha256:" + lowercase hex of SHA-256 over those bytes) names one message.
//
//	schema: lockGrant.v1
//	resource: invoice-batch/2026-07-19
//	owner: spiffe://example.org/worker/settlement-7
//	requestId: req-8c1f
//	lease: lease-91
//	operationRoot: sha256:51c3…
//	operationClass: settle
//	fenceToken: 8842
//	backendRevision: 1920184
//	policyGeneration: 12
//	issuerEpoch: 37
//	ttlMs: 10000
//	issuedAt: 2026-07-19T10:00:00.000Z
//	expiresAt: 2026-07-19T10:00:10.000Z
//
// # Proofs
//
// A proof is "sig:<keyId>:<base64url>" (Ed25519) or "mac:<keyId>:<base64url>"
// (HMAC-SHA256) over "fencegate/proof/v1\x00" + schema + "\x00" + digest.
// The bundle's key fixes the algorithm; a proof whose prefix disagrees is
// rejected, as is one whose key is unknown or retired, whose epoch the key
// may not sign or the bundle has revoked, or (Ed25519) whose S is not
// canonical.
//
// A batch proof, "batch:<keyId>:<index>/<size>:<base64url>:<base64url>",
// is one Ed25519 signature over the root of a Merkle tree of messages
// and the message's inclusion path (batch.go); the Verifier caches the
// roots it verified, so the other messages of a batch cost a path fold.
package grant
