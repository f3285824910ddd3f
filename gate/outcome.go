package gate

import (
	"errors"
	"fmt"
)

// Outcome is the stable code of one gate decision. Logs, metrics, receipts
// and wire formats carry the code; Go callers branch with errors.Is against
// the sentinel of the same name (Outcome.Err).
type Outcome string

// Every outcome the gate can produce. ACCEPTED and REPLAYED let the write
// stand; every other code is a rejection that changed no business data and
// never changed highestFence.
const (
	Accepted  Outcome = "ACCEPTED"  // the business change, fence state and receipt committed together
	Replayed  Outcome = "REPLAYED"  // exact replay of an accepted segment; the original receipt is returned
	Malformed Outcome = "MALFORMED" // the mutation envelope failed strict validation (step 1)

	// Outcomes of authentication (steps 1–4, Policy.Authenticate) and of
	// Decide's policy and evidence steps; none touches state.
	BadProof         Outcome = "BAD_PROOF"         // grant/status unparsable, or a proof does not verify
	BindingMismatch  Outcome = "BINDING_MISMATCH"  // envelope and grant (or status and grant) disagree, or class not allowed
	IdentityMismatch Outcome = "IDENTITY_MISMATCH" // the caller's authenticated identity is not the grant owner
	NotHeld          Outcome = "NOT_HELD"          // no proof that the grant is HELD right now
	EpochRevoked     Outcome = "EPOCH_REVOKED"     // the grant's or status's issuer epoch is revoked
	PolicyStale      Outcome = "POLICY_STALE"      // the grant's policy generation is below the resource's minimum
	ProofExpired     Outcome = "PROOF_EXPIRED"     // the status proof is not fresh by the gate's clock and skew bound
	ReadGrant        Outcome = "READ_GRANT"        // a read/write lock reader's grant (resource NAME/_read) presented for a mutation

	// Fence and segment outcomes (step 6, decided with the fence row locked).
	StaleOwner      Outcome = "STALE_OWNER"      // fence below highestFence, or at or below the floor of the last resume
	SegmentGap      Outcome = "SEGMENT_GAP"      // segmentSeq is not the next one
	RootMismatch    Outcome = "ROOT_MISMATCH"    // equal fence, other operation root
	Quarantined     Outcome = "QUARANTINED"      // a segment already accepted arrived with another payload
	FenceRegression Outcome = "FENCE_REGRESSION" // proof that the registry went backwards (the rule: regression.go); a lower fence alone is STALE_OWNER
	ResourcePaused  Outcome = "RESOURCE_PAUSED"  // the resource is paused after a FENCE_REGRESSION
)

// Outcomes lists every outcome in a fixed order (for counters and docs).
var Outcomes = []Outcome{
	Accepted, Replayed, Malformed, BadProof, BindingMismatch, IdentityMismatch,
	NotHeld, EpochRevoked, PolicyStale, ProofExpired, StaleOwner, SegmentGap,
	RootMismatch, Quarantined, FenceRegression, ResourcePaused, ReadGrant,
}

// Final reports whether an answer o to an envelope holds for every copy
// of it, forever: no copy of the same envelope (same grant, proof,
// segment and payload) can be accepted after the gate answered o. Only
// SEGMENT_GAP (the missing segment may arrive), RESOURCE_PAUSED (an
// operator may resume) and NOT_HELD (a status query that failed may
// succeed) are not final. A writer may forget an envelope once its answer
// is final; until then a copy still in the network can land (see
// client.Lease.Settle).
func (o Outcome) Final() bool {
	switch o {
	case SegmentGap, ResourcePaused, NotHeld, "":
		return false
	}
	return true
}

// Error is the sentinel of one Outcome. Compare with errors.Is.
type Error struct{ outcome Outcome }

func (e *Error) Error() string { return "gate: " + string(e.outcome) }

// Outcome returns the code the sentinel stands for.
func (e *Error) Outcome() Outcome { return e.outcome }

// Sentinels, one per Outcome. A *Rejection wraps the sentinel of its
// outcome (and, for a FENCE_REGRESSION, also the STALE_OWNER or
// ROOT_MISMATCH that the fence comparison alone would have given).
var (
	ErrAccepted         = &Error{Accepted}
	ErrReplayed         = &Error{Replayed}
	ErrMalformed        = &Error{Malformed}
	ErrBadProof         = &Error{BadProof}
	ErrBindingMismatch  = &Error{BindingMismatch}
	ErrIdentityMismatch = &Error{IdentityMismatch}
	ErrNotHeld          = &Error{NotHeld}
	ErrEpochRevoked     = &Error{EpochRevoked}
	ErrPolicyStale      = &Error{PolicyStale}
	ErrProofExpired     = &Error{ProofExpired}
	ErrStaleOwner       = &Error{StaleOwner}
	ErrSegmentGap       = &Error{SegmentGap}
	ErrRootMismatch     = &Error{RootMismatch}
	ErrQuarantined      = &Error{Quarantined}
	ErrFenceRegression  = &Error{FenceRegression}
	ErrResourcePaused   = &Error{ResourcePaused}
	ErrReadGrant        = &Error{ReadGrant}
)

var sentinels = map[Outcome]*Error{}

func init() {
	for _, e := range []*Error{
		ErrAccepted, ErrReplayed, ErrMalformed, ErrBadProof, ErrBindingMismatch,
		ErrIdentityMismatch, ErrNotHeld, ErrEpochRevoked, ErrPolicyStale,
		ErrProofExpired, ErrStaleOwner, ErrSegmentGap, ErrRootMismatch,
		ErrQuarantined, ErrFenceRegression, ErrResourcePaused, ErrReadGrant,
	} {
		sentinels[e.outcome] = e
	}
}

// Err returns the sentinel for o (nil for an unknown code).
func (o Outcome) Err() error {
	if e, ok := sentinels[o]; ok {
		return e
	}
	return nil
}

// Rejection is the error the gate returns for every outcome except
// ACCEPTED (and, from Apply, REPLAYED — see IsSuccess). It says precisely
// why and carries the numbers the decision compared.
type Rejection struct {
	Outcome        Outcome
	Resource       string
	FenceToken     uint64 // the mutation's fence
	HighestFence   uint64 // the resource's highestFence when decided (0 before step 6)
	SegmentSeq     uint64
	LastSegmentSeq uint64 // the resource's lastSegmentSeq when decided (0 before step 6)
	Reason         string // human-readable, precise
	// Also is a second outcome the error matches (FENCE_REGRESSION also
	// matches STALE_OWNER or ROOT_MISMATCH: the spec says a smaller fence is
	// always stale); "" if none.
	Also Outcome
	// Recorded reports that the decision wrote a record in the transaction
	// (quarantine row, alarm row and pause, or shadow log) that is lost if
	// the caller rolls the transaction back. No business data is written.
	Recorded bool
	// Alarm is the kind of alarm the decision raised ("" for none):
	// FENCE_REGRESSION (the resource is paused in enforce mode) or
	// REGRESSION_SUSPECTED (a STALE_OWNER that may be a regression).
	Alarm AlarmKind
	Cause error // underlying error (e.g. a grant sentinel), may be nil
}

func (r *Rejection) Error() string {
	return fmt.Sprintf("gate: %s: %s", r.Outcome, r.Reason)
}

// Unwrap exposes the outcome sentinel, the Also sentinel and the cause.
func (r *Rejection) Unwrap() []error {
	errs := []error{r.Outcome.Err()}
	if r.Also != "" {
		errs = append(errs, r.Also.Err())
	}
	if r.Cause != nil {
		errs = append(errs, r.Cause)
	}
	return errs
}

// OutcomeOf returns the outcome err carries: Accepted for nil, the
// Rejection's Outcome, the sentinel's outcome, or "" for other errors
// (a database failure, a failed business function).
func OutcomeOf(err error) Outcome {
	if err == nil {
		return Accepted
	}
	var r *Rejection
	if errors.As(err, &r) {
		return r.Outcome
	}
	var e *Error
	if errors.As(err, &e) {
		return e.outcome
	}
	return ""
}

// IsSuccess reports whether err means the write stands: nil (ACCEPTED) or
// REPLAYED (the original receipt was returned after a lost ACK).
func IsSuccess(err error) bool {
	return err == nil || errors.Is(err, ErrReplayed)
}
