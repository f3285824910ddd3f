package grant

import (
	"crypto/sha256"
	"fmt"
	"time"
)

// SchemaGrant names the lockGrant.v1 message.
const SchemaGrant = "lockGrant.v1"

// TTLMsMax is the largest TTL the format carries (100 years), far above any
// registry limit; it keeps IssuedAt + TTLMs inside time.Duration.
const TTLMsMax = 100 * 365 * 24 * 3600 * 1000

// grantFields is the canonical field order of lockGrant.v1.
var grantFields = []string{
	"schema", "resource", "owner", "requestId", "lease", "operationRoot",
	"operationClass", "fenceToken", "backendRevision", "policyGeneration",
	"issuerEpoch", "ttlMs", "issuedAt", "expiresAt", "heldUntil",
}

// grantFieldsRequired is how many of grantFields every grant has: the
// last, heldUntil, is present only in the held-statement form.
const grantFieldsRequired = 14

// Grant is an immutable lockGrant.v1: the registry's signed statement that
// Owner was granted the lease on Resource with FenceToken. A grant only lets
// its owner try; the gate at the resource decides whether a write lands.
//
// Instants are the registry's clock, UTC, millisecond precision. ExpiresAt
// is the lease's first expiry, IssuedAt + TTLMs; renewals extend the lease
// in the registry and show in status proofs, never in the grant.
//
// A grant with HeldUntil set is also the registry's first HELD statement
// about itself: HELD at IssuedAt, to be relied on until HeldUntil (registry
// clock) minus the gate's skew bound, exactly as a grantStatus.v1 with
// State HELD, IssuedAt and ValidUntil = HeldUntil. The registry never sets
// it past ExpiresAt minus its skew bound; the format requires
// IssuedAt <= HeldUntil <= ExpiresAt. A zero HeldUntil is the earlier form
// (no heldUntil line): the grant proves nothing about its state, and a
// gate needs a status proof or a query.
type Grant struct {
	Resource         string // canonical resource ID (ValidateResource)
	Owner            string // workload identity (ValidateOwner)
	RequestID        string // the acquire's idempotency key (ValidateToken)
	Lease            string // registry lease ID (ValidateToken)
	OperationRoot    Digest // OperationRoot(Resource, operationID)
	OperationClass   string // ValidateOperationClass
	FenceToken       uint64 // per resource, strictly increasing, >= 1
	BackendRevision  uint64 // store revision of the granting transaction, >= 1
	PolicyGeneration uint64 // the resource's policy generation at grant time
	IssuerEpoch      uint64 // registry issuer epoch, >= 1
	TTLMs            uint64 // server-side TTL in milliseconds, >= 1
	IssuedAt         time.Time
	ExpiresAt        time.Time
	HeldUntil        time.Time // zero: the form without a held statement
}

// HeldStatement reports whether the grant carries its own HELD statement
// (a heldUntil line).
func (g *Grant) HeldStatement() bool { return !g.HeldUntil.IsZero() }

// Schema returns SchemaGrant.
func (g *Grant) Schema() string { return SchemaGrant }

// Epoch returns the issuer epoch the grant was signed under.
func (g *Grant) Epoch() uint64 { return g.IssuerEpoch }

func (g *Grant) sealed() {}

// Encode returns the canonical bytes. It does not validate: Sign and Parse
// do. For every b that Parse accepts, Encode(Parse(b)) == b.
func (g *Grant) Encode() []byte { return g.appendEncoded(make([]byte, 0, grantEncodedCap)) }

// grantEncodedCap is room for a grant's canonical bytes with the longest
// usual identifiers: Encode's first allocation, Digest's stack buffer (a
// longer grant spills to the heap, with the same bytes).
const grantEncodedCap = 512

// appendEncoded appends the canonical bytes to b.
func (g *Grant) appendEncoded(b []byte) []byte {
	b = appendStrLine(b, "schema", SchemaGrant)
	b = appendStrLine(b, "resource", g.Resource)
	b = appendStrLine(b, "owner", g.Owner)
	b = appendStrLine(b, "requestId", g.RequestID)
	b = appendStrLine(b, "lease", g.Lease)
	b = appendDigestLine(b, "operationRoot", g.OperationRoot)
	b = appendStrLine(b, "operationClass", g.OperationClass)
	b = appendUintLine(b, "fenceToken", g.FenceToken)
	b = appendUintLine(b, "backendRevision", g.BackendRevision)
	b = appendUintLine(b, "policyGeneration", g.PolicyGeneration)
	b = appendUintLine(b, "issuerEpoch", g.IssuerEpoch)
	b = appendUintLine(b, "ttlMs", g.TTLMs)
	b = appendTimeLine(b, "issuedAt", g.IssuedAt)
	b = appendTimeLine(b, "expiresAt", g.ExpiresAt)
	if g.HeldStatement() {
		b = appendTimeLine(b, "heldUntil", g.HeldUntil)
	}
	return b
}

// Digest returns sha256 over the canonical bytes, encoded into a buffer
// on the stack: a grant is digested several times on its way out (its
// memo, its signature, its gate proofs).
func (g *Grant) Digest() Digest {
	var buf [grantEncodedCap]byte
	return sha256.Sum256(g.appendEncoded(buf[:0]))
}

// Validate checks every field against its rule and ExpiresAt against
// IssuedAt + TTLMs. The error is a *FieldError wrapping ErrMalformed.
func (g *Grant) Validate() error {
	ids := []struct {
		field, value string
		check        func(string) error
	}{
		{"resource", g.Resource, ValidateResource},
		{"owner", g.Owner, ValidateOwner},
		{"requestId", g.RequestID, ValidateToken},
		{"lease", g.Lease, ValidateToken},
		{"operationClass", g.OperationClass, ValidateOperationClass},
	}
	for _, id := range ids {
		if err := id.check(id.value); err != nil {
			return &FieldError{Schema: SchemaGrant, Field: id.field, Reason: err.Error()}
		}
	}
	return g.validateValues()
}

// validateValues checks the non-identifier fields; ParseGrant has already
// checked identifiers line by line.
func (g *Grant) validateValues() error {
	fe := func(field, reason string) error {
		return &FieldError{Schema: SchemaGrant, Field: field, Reason: reason}
	}
	switch {
	case g.OperationRoot.IsZero():
		return fe("operationRoot", "zero digest")
	case g.FenceToken == 0:
		return fe("fenceToken", "must be at least 1")
	case g.BackendRevision == 0:
		return fe("backendRevision", "must be at least 1")
	case g.IssuerEpoch == 0:
		return fe("issuerEpoch", "must be at least 1")
	case g.TTLMs == 0:
		return fe("ttlMs", "must be at least 1")
	}
	if err := checkInstant(g.IssuedAt); err != nil {
		return fe("issuedAt", err.Error())
	}
	if err := checkInstant(g.ExpiresAt); err != nil {
		return fe("expiresAt", err.Error())
	}
	if err := g.checkExpiry(); err != nil {
		return fe("expiresAt", err.Error())
	}
	if g.HeldStatement() {
		if err := checkInstant(g.HeldUntil); err != nil {
			return fe("heldUntil", err.Error())
		}
		if g.HeldUntil.Before(g.IssuedAt) || g.HeldUntil.After(g.ExpiresAt) {
			return fe("heldUntil", "must lie within issuedAt..expiresAt")
		}
	}
	return nil
}

func (g *Grant) checkExpiry() error {
	if g.TTLMs > TTLMsMax {
		return fmt.Errorf("ttlMs %d above format limit %d", g.TTLMs, uint64(TTLMsMax))
	}
	want := g.IssuedAt.Add(time.Duration(g.TTLMs) * time.Millisecond)
	if !g.ExpiresAt.Equal(want) {
		return fmt.Errorf("must equal issuedAt + ttlMs (%s)", want.UTC().Format(TimeLayout))
	}
	return nil
}

// ParseGrant strictly parses canonical lockGrant.v1 bytes. Anything that is
// not exactly what Encode would produce is rejected with a *FieldError
// naming the field and the reason.
func ParseGrant(b []byte) (*Grant, error) {
	v, err := splitFieldsMin(SchemaGrant, grantFields, grantFieldsRequired, b)
	if err != nil {
		return nil, err
	}
	p := fieldParser{schema: SchemaGrant, names: grantFields, values: v}
	if v[0] != SchemaGrant {
		return nil, &FieldError{Schema: SchemaGrant, Field: "schema", Line: 1, Reason: fmt.Sprintf("want %s", SchemaGrant)}
	}
	g := &Grant{
		Resource:         p.str(1, ValidateResource),
		Owner:            p.str(2, ValidateOwner),
		RequestID:        p.str(3, ValidateToken),
		Lease:            p.str(4, ValidateToken),
		OperationRoot:    p.digest(5),
		OperationClass:   p.str(6, ValidateOperationClass),
		FenceToken:       p.uint(7),
		BackendRevision:  p.uint(8),
		PolicyGeneration: p.uint(9),
		IssuerEpoch:      p.uint(10),
		TTLMs:            p.uint(11),
		IssuedAt:         p.time(12),
		ExpiresAt:        p.time(13),
	}
	if len(v) > grantFieldsRequired {
		g.HeldUntil = p.time(14)
	}
	if p.err != nil {
		return nil, p.err
	}
	if err := g.validateValues(); err != nil {
		return nil, err
	}
	return g, nil
}
