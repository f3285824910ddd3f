package gate

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencegate/fencegate/gate/internal/replaced"
	"github.com/fencegate/fencegate/grant"
)

// StatusSkewMaxDefault is the default bound on how far the gate's clock may
// run behind the registry's. A status proof is fresh only while
// now + skew < validUntil, so a gate whose clock is up to this much slow
// still stops trusting the proof before the registry lets the lease go.
const StatusSkewMaxDefault = 500 * time.Millisecond

// Policy configures the authentication steps. It is immutable once used.
type Policy struct {
	// Verifier checks grant and status proofs against the trust bundle.
	// Required.
	Verifier *grant.Verifier
	// OperationClasses are the grant operation classes this gate accepts.
	// Optional: empty accepts every class.
	OperationClasses []string
	// StatusSkewMax is the clock-skew bound subtracted from a status
	// proof's validUntil. Optional, defaults to StatusSkewMaxDefault;
	// negative values are refused by Check.
	StatusSkewMax time.Duration
	// ParsedCacheEntriesMax bounds the cache of parsed grants and the
	// cache of parsed status statements that Check sets up, each; a hit
	// skips the parse (never the proof check). Optional, defaults to
	// ParsedCacheEntriesDefault; negative disables both.
	ParsedCacheEntriesMax int

	// NegativeControl is zero in every gate a deployment builds, and no
	// package outside gate/ can make it anything else: its type is in
	// gate/internal, which Go lets no other package import. It is how
	// gate/gatebreak (linked only by the simulator's negative controls,
	// sim/negative, and by tests) puts a negative control's function in
	// place of Decide; gate/adapt's Decider then decides with it and
	// checks nothing it stores.
	NegativeControl replaced.Decide[Input, Decision]
	// NegativeVerify is zero in every gate a deployment builds, as
	// NegativeControl is: gate/gatebreak.ReplaceVerify puts a negative
	// control's proof check (one that skips a batch proof's path, say)
	// in place of the Verifier's.
	NegativeVerify replaced.Verify[grant.Digest]
	// NegativeReadGrant is zero in every gate a deployment builds, as
	// NegativeControl is: gate/gatebreak.AcceptReaderGrants turns off
	// the READ_GRANT check (a reader's grant presented for a mutation),
	// for the simulator's read/write lock rounds to show their checker
	// counts what the check stops.
	NegativeReadGrant replaced.Check

	grants   *parsedCache[grant.Grant]
	statuses *parsedCache[grant.Status]
}

// Check validates p and fills in defaults.
func (p *Policy) Check() error {
	if p.Verifier == nil {
		return errors.New("gate: policy: Verifier is required")
	}
	if p.StatusSkewMax < 0 {
		return fmt.Errorf("gate: policy: StatusSkewMax %s is negative", p.StatusSkewMax)
	}
	if p.StatusSkewMax == 0 {
		p.StatusSkewMax = StatusSkewMaxDefault
	}
	if p.ParsedCacheEntriesMax == 0 {
		p.ParsedCacheEntriesMax = ParsedCacheEntriesDefault
	}
	if p.ParsedCacheEntriesMax > 0 && p.grants == nil {
		p.grants = newParsedCache[grant.Grant](p.ParsedCacheEntriesMax)
		p.statuses = newParsedCache[grant.Status](p.ParsedCacheEntriesMax)
	}
	for _, c := range p.OperationClasses {
		if err := grant.ValidateOperationClass(c); err != nil {
			return fmt.Errorf("gate: policy: operation class %q: %v", c, err)
		}
	}
	return nil
}

// Verified is a mutation that passed steps 1–4: its grant is genuine,
// bound to the envelope, and owned by the caller. Status, if not nil, is a
// genuine status statement about this grant whose freshness and state are
// still to be judged (Decide does, against the gate's clock).
type Verified struct {
	Mutation    Mutation
	Grant       *grant.Grant
	GrantDigest grant.Digest
	Root        grant.Digest
	Status      *grant.Status
}

// Authenticate runs steps 1–4 of the decision (strict parse, proofs,
// binding, identity) for a mutation sent by the authenticated caller. It
// reads no resource state and writes nothing. Errors are *Rejection with
// outcome MALFORMED, BAD_PROOF, EPOCH_REVOKED, READ_GRANT,
// BINDING_MISMATCH or IDENTITY_MISMATCH.
func (p *Policy) Authenticate(m *Mutation, caller string) (*Verified, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	rej := func(o Outcome, cause error, format string, args ...any) (*Verified, error) {
		return nil, &Rejection{Outcome: o, Resource: m.Resource, FenceToken: m.FenceToken,
			SegmentSeq: m.SegmentSeq, Reason: fmt.Sprintf(format, args...), Cause: cause}
	}
	// ParseGrant accepts only canonical bytes (Encode(Parse(b)) == b), so
	// hashing what was received equals g.Digest() without re-encoding, and
	// keys the cache of earlier parses.
	gd := grant.Digest(sha256.Sum256(m.Grant))
	g, err := p.grants.parse(gd, m.Grant, grant.ParseGrant)
	if err != nil {
		return rej(BadProof, err, "grant does not parse: %v", err)
	}
	verify := replaced.OrVerify(p.NegativeVerify, p.Verifier.VerifyDigest)
	if err := verify(grant.SchemaGrant, gd, g.IssuerEpoch, m.GrantProof); err != nil {
		return rej(proofOutcome(err), err, "grant proof: %v", err)
	}
	var st *grant.Status
	if len(m.Status) > 0 {
		sd := grant.Digest(sha256.Sum256(m.Status)) // canonical, as for the grant
		if st, err = p.statuses.parse(sd, m.Status, grant.ParseStatus); err != nil {
			return rej(BadProof, err, "status does not parse: %v", err)
		}
		if err := verify(grant.SchemaStatus, sd, st.IssuerEpoch, m.StatusProof); err != nil {
			return rej(proofOutcome(err), err, "status proof: %v", err)
		}
		if st.Grant != gd {
			return rej(BindingMismatch, nil, "status is about grant %s, not %s", st.Grant, gd)
		}
	}
	if ReaderResource(g.Resource) && replaced.Runs(p.NegativeReadGrant) {
		return rej(ReadGrant, nil, "grant on %s is a read/write lock reader's: only a writer's grant may mutate", g.Resource)
	}
	root := m.OperationRoot()
	if err := checkBinding(m, g, root); err != nil {
		return rej(BindingMismatch, nil, "%v", err)
	}
	if len(p.OperationClasses) > 0 && !slices.Contains(p.OperationClasses, g.OperationClass) {
		return rej(BindingMismatch, nil, "operation class %q not allowed by this gate", g.OperationClass)
	}
	if caller != g.Owner {
		return rej(IdentityMismatch, nil, "caller %q is not the grant owner %q", caller, g.Owner)
	}
	return &Verified{Mutation: *m, Grant: g, GrantDigest: gd, Root: root, Status: st}, nil
}

// readSegment ends a read/write lock reader's resource (wire.ReadSegment,
// "NAME/_read"); the gate names it itself, as it imports no registry
// package (pinned equal by a test).
const readSegment = "/_read"

// ReaderResource reports whether resource is a read/write lock reader's
// (NAME + "/_read"): a grant on one is a reader's lease, which never opens
// a gate for a mutation, whatever resource the envelope names (READ_GRANT).
func ReaderResource(resource string) bool {
	return len(resource) > len(readSegment) && strings.HasSuffix(resource, readSegment)
}

// proofOutcome maps a grant verification error: a revoked epoch is its own
// outcome, every other failure is BAD_PROOF.
func proofOutcome(err error) Outcome {
	if errors.Is(err, grant.ErrEpochRevoked) {
		return EpochRevoked
	}
	return BadProof
}

// checkBinding compares the envelope with the grant field by field.
func checkBinding(m *Mutation, g *grant.Grant, root grant.Digest) error {
	switch {
	case m.Resource != g.Resource:
		return fmt.Errorf("resource %q, grant is for %q", m.Resource, g.Resource)
	case m.Lease != g.Lease:
		return fmt.Errorf("lease %q, grant has %q", m.Lease, g.Lease)
	case root != g.OperationRoot:
		return fmt.Errorf("operation root of %q is %s, grant binds %s", m.OperationID, root, g.OperationRoot)
	case m.FenceToken != g.FenceToken:
		return fmt.Errorf("fence %d, grant has %d", m.FenceToken, g.FenceToken)
	}
	return nil
}
