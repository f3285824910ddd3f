package wire

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fencegate/fencegate/grant"
)

// A lock set is 2 to LockSetMembersMax distinct resources taken all at
// once or not at all (issue 46): one store transaction grants every
// member, and a set that cannot have them all waits in every member's
// queue holding none. Each member gets an ordinary grant on its own
// resource, with its own fence, under the request ID
// MemberRequestID(set's request ID, i) — an ordinary token, so every
// per-grant path (status, renew, release, the gates) works per member
// unchanged. The set's own request ID is the idempotency key a caller
// retries with.
//
// Request IDs beginning SetRequestIDPrefix are reserved for the members
// of sets: neither a plain acquire nor a set acquire may name one
// (ErrInvalid).
const (
	// LockSetMembersMin and LockSetMembersMax bound a set's members. The
	// upper bound keeps one set's commit (a compare and a put per member,
	// request entries, settings) inside one etcd transaction's
	// --max-txn-ops (128).
	LockSetMembersMin = 2
	LockSetMembersMax = 16
	// SetRequestIDPrefix starts every member's request ID; request IDs
	// beginning with it are reserved.
	SetRequestIDPrefix = "set."
	// LockSetRequestIDBytesMax bounds a set's request ID: its members'
	// request IDs (MemberRequestID) must still be tokens
	// (grant.TokenBytesMax).
	LockSetRequestIDBytesMax = grant.TokenBytesMax - len(SetRequestIDPrefix) - 3 // "15."
)

// MemberRequestID is the request ID member i (from 0, in sorted order)
// of the set whose request ID is id is granted under: "set.<i>.<id>".
func MemberRequestID(id string, i int) string {
	return SetRequestIDPrefix + strconv.Itoa(i) + "." + id
}

// ReservedRequestID reports whether id is reserved for a set's member
// (it begins SetRequestIDPrefix): a caller may not name it in an acquire.
func ReservedRequestID(id string) bool { return strings.HasPrefix(id, SetRequestIDPrefix) }

// ValidateLockSet checks a set's members: LockSetMembersMin to
// LockSetMembersMax canonical resource IDs (grant.ValidateResource),
// named in strictly increasing byte order (so sorted and distinct: the
// SDK and CLI sort for their user), none a semaphore's slot or a reader's resource (ReadOf). It returns
// an error wrapping ErrInvalid that names the first member at fault.
func ValidateLockSet(members []string) error {
	if n := len(members); n < LockSetMembersMin || n > LockSetMembersMax {
		return fmt.Errorf("%w: members: a lock set has %d to %d members, not %d", ErrInvalid, LockSetMembersMin, LockSetMembersMax, n)
	}
	for i, m := range members {
		if err := grant.ValidateResource(m); err != nil {
			return fmt.Errorf("%w: members[%d]: %v", ErrInvalid, i, err)
		}
		if _, _, slot := SlotOf(m); slot {
			return fmt.Errorf("%w: members[%d]: %s is a semaphore's slot", ErrInvalid, i, m)
		}
		if _, read := ReadOf(m); read {
			return fmt.Errorf("%w: members[%d]: %s is a read/write lock's reader resource", ErrInvalid, i, m)
		}
		if i > 0 && members[i-1] >= m {
			what := "out of order"
			if members[i-1] == m {
				what = "named twice"
			}
			return fmt.Errorf("%w: members[%d]: %s is %s: name a set's members sorted and distinct", ErrInvalid, i, m, what)
		}
	}
	return nil
}

// ValidateSetRequestID checks a set's request ID: a token
// (grant.ValidateToken) of at most LockSetRequestIDBytesMax bytes, not
// reserved (ReservedRequestID). It returns an error wrapping ErrInvalid.
func ValidateSetRequestID(id string) error {
	if err := grant.ValidateToken(id); err != nil {
		return fmt.Errorf("%w: requestId: %v", ErrInvalid, err)
	}
	if len(id) > LockSetRequestIDBytesMax {
		return fmt.Errorf("%w: requestId: a lock set's request ID has at most %d bytes (its members' IDs add %q, an index and a dot), not %d",
			ErrInvalid, LockSetRequestIDBytesMax, SetRequestIDPrefix, len(id))
	}
	if ReservedRequestID(id) {
		return fmt.Errorf("%w: requestId: request IDs beginning %q are reserved for the members of lock sets", ErrInvalid, SetRequestIDPrefix)
	}
	return nil
}

// LockSetRequest asks for every member of a lock set at once: POST
// /v1/lockset/acquire and the registry's AcquireSet. The fields other
// than Members mean what they mean in AcquireRequest, for the set as a
// whole: every member's grant has the same TTL, issue instant, operation
// ID and class (each member's operation root is
// grant.OperationRoot(member, OperationID)).
type LockSetRequest struct {
	Members        []string `json:"members"` // sorted, distinct (ValidateLockSet)
	OperationID    string   `json:"operationId"`
	OperationClass string   `json:"operationClass"`
	// RequestID is the set's idempotency key, scoped to the owner
	// (ValidateSetRequestID): a retry returns the same grants while they
	// live, or their final states; never a second set of grants. A retry
	// naming other members, operation or TTL is ErrRequestMismatch.
	RequestID string `json:"requestId"`
	TTLMs     uint64 `json:"ttlMs,omitempty"`
	WaitMs    uint64 `json:"waitMs,omitempty"`
}

// IssuedSet is a lock set's answer: one Issued per member, in the set's
// (sorted) member order.
type IssuedSet struct {
	Members []Issued
}

// IssuedSetResponse is IssuedSet on the wire: each member's answer in
// the shape /v1/acquire answers with, in member order.
type IssuedSetResponse struct {
	Members []IssuedResponse `json:"members"`
}

// LockSetLeasesRequest is POST /v1/lockset/renew and /v1/lockset/release:
// every member's lease, in the set's member order.
type LockSetLeasesRequest struct {
	Leases []LeaseRequest `json:"leases"`
}

// LockSetReleaseResponse answers a successful POST /v1/lockset/release:
// each member's release, in member order.
type LockSetReleaseResponse struct {
	Members []ReleaseResponse `json:"members"`
}

// ValidateLockSetLeases checks the leases of a set's renewal or release:
// their resources a valid set (ValidateLockSet), each lease a token.
func ValidateLockSetLeases(leases []LeaseRequest) error {
	members := make([]string, len(leases))
	for i, l := range leases {
		members[i] = l.Resource
		if err := grant.ValidateToken(l.Lease); err != nil {
			return fmt.Errorf("%w: leases[%d].lease: %v", ErrInvalid, i, err)
		}
	}
	return ValidateLockSet(members)
}
