package grant

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"time"
)

// SchemaStatus names the grantStatus.v1 message.
const SchemaStatus = "grantStatus.v1"

var statusFields = []string{
	"schema", "grant", "state", "backendRevision", "issuerEpoch", "issuedAt", "validUntil",
}

// State is a grant's state as the registry reports it.
type State string

// The four grant states. Only HELD lets a write through a gate.
const (
	StateHeld     State = "HELD"
	StateExpired  State = "EXPIRED"
	StateReleased State = "RELEASED"
	StateRevoked  State = "REVOKED"
)

// ParseState accepts exactly one of the four state names.
func ParseState(s string) (State, error) {
	switch st := State(s); st {
	case StateHeld, StateExpired, StateReleased, StateRevoked:
		return st, nil
	}
	return "", errors.New("want HELD, EXPIRED, RELEASED or REVOKED")
}

// Status is a grantStatus.v1: the registry's short-lived signed statement
// that the grant with digest Grant was in State at BackendRevision. A gate
// may rely on it only until ValidUntil (registry clock) minus its own skew
// bound; the registry never sets ValidUntil past the lease's expiry minus
// its configured skew bound.
type Status struct {
	Grant           Digest // the grant's Digest()
	State           State
	BackendRevision uint64 // store revision the state was read at, >= 1
	IssuerEpoch     uint64 // epoch of the signing registry, >= 1
	IssuedAt        time.Time
	ValidUntil      time.Time // >= IssuedAt
}

// Schema returns SchemaStatus.
func (s *Status) Schema() string { return SchemaStatus }

// Epoch returns the issuer epoch the status was signed under.
func (s *Status) Epoch() uint64 { return s.IssuerEpoch }

func (s *Status) sealed() {}

// Encode returns the canonical bytes; see Grant.Encode.
func (s *Status) Encode() []byte {
	w := lineWriter{b: make([]byte, 0, 256)}
	w.str("schema", SchemaStatus)
	w.digest("grant", s.Grant)
	w.str("state", string(s.State))
	w.uint("backendRevision", s.BackendRevision)
	w.uint("issuerEpoch", s.IssuerEpoch)
	w.time("issuedAt", s.IssuedAt)
	w.time("validUntil", s.ValidUntil)
	return w.b
}

// Digest returns sha256 over the canonical bytes.
func (s *Status) Digest() Digest { return sha256.Sum256(s.Encode()) }

// Validate checks every field; the error is a *FieldError.
func (s *Status) Validate() error {
	fe := func(field, reason string) error {
		return &FieldError{Schema: SchemaStatus, Field: field, Reason: reason}
	}
	if s.Grant.IsZero() {
		return fe("grant", "zero digest")
	}
	if _, err := ParseState(string(s.State)); err != nil {
		return fe("state", err.Error())
	}
	if s.BackendRevision == 0 {
		return fe("backendRevision", "must be at least 1")
	}
	if s.IssuerEpoch == 0 {
		return fe("issuerEpoch", "must be at least 1")
	}
	if err := checkInstant(s.IssuedAt); err != nil {
		return fe("issuedAt", err.Error())
	}
	if err := checkInstant(s.ValidUntil); err != nil {
		return fe("validUntil", err.Error())
	}
	if s.ValidUntil.Before(s.IssuedAt) {
		return fe("validUntil", "before issuedAt")
	}
	return nil
}

// ParseStatus strictly parses canonical grantStatus.v1 bytes.
func ParseStatus(b []byte) (*Status, error) {
	v, err := splitFields(SchemaStatus, statusFields, b)
	if err != nil {
		return nil, err
	}
	if v[0] != SchemaStatus {
		return nil, &FieldError{Schema: SchemaStatus, Field: "schema", Line: 1, Reason: fmt.Sprintf("want %s", SchemaStatus)}
	}
	p := fieldParser{schema: SchemaStatus, names: statusFields, values: v}
	digest := p.digest(1)
	st, err := ParseState(v[2])
	p.fail(2, err)
	s := &Status{
		Grant:           digest,
		State:           st,
		BackendRevision: p.uint(3),
		IssuerEpoch:     p.uint(4),
		IssuedAt:        p.time(5),
		ValidUntil:      p.time(6),
	}
	if p.err != nil {
		return nil, p.err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}
