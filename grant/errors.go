package grant

import (
	"errors"
	"fmt"
)

// Error is a sentinel rejection with a stable, machine-readable code.
// Callers branch with errors.Is against the exported sentinels; the code is
// what logs, metrics and wire formats carry.
type Error struct {
	code string
	text string
}

// Code returns the stable code, such as "KEY_RETIRED".
func (e *Error) Code() string { return e.code }

func (e *Error) Error() string { return "grant: " + e.text }

// Sentinel errors. Every rejection returned by this package wraps exactly one.
var (
	// ErrMalformed: a lockGrant.v1 or grantStatus.v1 message is not in
	// canonical form. The wrapping *FieldError names the field and reason.
	ErrMalformed = &Error{"MALFORMED", "malformed message"}
	// ErrMalformedProof: the proof text is not sig:<keyId>:<b64> or
	// mac:<keyId>:<b64> with a canonical encoding of the right length.
	ErrMalformedProof = &Error{"MALFORMED_PROOF", "malformed proof"}
	// ErrUnknownKey: the trust bundle has no key with the proof's key ID.
	ErrUnknownKey = &Error{"UNKNOWN_KEY", "unknown key"}
	// ErrAlgMismatch: the proof's prefix names another algorithm than the
	// key's. The key fixes the algorithm; a proof never chooses it.
	ErrAlgMismatch = &Error{"ALG_MISMATCH", "algorithm mismatch"}
	// ErrKeyRetired: the key is retired in the trust bundle.
	ErrKeyRetired = &Error{"KEY_RETIRED", "key retired"}
	// ErrEpochNotAllowed: the key may not sign for the message's issuer epoch.
	ErrEpochNotAllowed = &Error{"EPOCH_NOT_ALLOWED", "issuer epoch not allowed for key"}
	// ErrEpochRevoked: the message's issuer epoch is below the bundle's
	// revokedBelowEpoch line.
	ErrEpochRevoked = &Error{"EPOCH_REVOKED", "issuer epoch revoked"}
	// ErrNonCanonicalSignature: an Ed25519 signature whose S is not below
	// the group order L (a malleated signature).
	ErrNonCanonicalSignature = &Error{"NON_CANONICAL_SIGNATURE", "non-canonical signature"}
	// ErrBadSignature: the signature or MAC does not verify.
	ErrBadSignature = &Error{"BAD_SIGNATURE", "signature does not verify"}
	// ErrBadBundle: a trust bundle or key file failed strict loading.
	ErrBadBundle = &Error{"BAD_BUNDLE", "bad trust bundle"}
	// ErrBundleNotNewer: a bundle replace was refused because its version is
	// not above the loaded one.
	ErrBundleNotNewer = &Error{"BUNDLE_NOT_NEWER", "bundle version not newer"}
)

// CodeOf returns the stable code of the first *Error in err's chain, or ""
// when err is nil or carries none.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.code
	}
	return ""
}

// FieldError reports why a message failed strict parsing or validation. It
// wraps ErrMalformed.
type FieldError struct {
	Schema string // lockGrant.v1 or grantStatus.v1
	Field  string // the offending field, or "" for whole-message problems
	Line   int    // 1-based line number, or 0 when not from parsing
	Reason string
}

func (e *FieldError) Error() string {
	where := e.Schema
	if e.Field != "" {
		where += ": field " + e.Field
	}
	if e.Line > 0 {
		where += fmt.Sprintf(" (line %d)", e.Line)
	}
	return "grant: malformed " + where + ": " + e.Reason
}

func (e *FieldError) Unwrap() error { return ErrMalformed }
