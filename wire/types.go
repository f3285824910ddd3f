package wire

import (
	"time"

	"github.com/fencegate/fencegate/grant"
)

// The requests and answers of the registry API. Field names are the wire
// names; api/openapi.yaml describes the same shapes. The server decodes
// requests strictly (no unknown, repeated or re-cased fields); a field's
// rule is the registry's (a bad value is INVALID, 400), the JSON shape is
// the HTTP layer's (a bad shape is BAD_REQUEST, 400).

// AcquireRequest asks for the lease on a resource: POST /v1/acquire, the
// registry's Acquire in process, and the Go SDK's Session.Acquire and
// Session.Lock — one request, one shape, from the caller to the registry.
// The owner is the caller's identity, never a field.
type AcquireRequest struct {
	Resource       string `json:"resource"`       // canonical resource ID (grant.ValidateResource)
	OperationID    string `json:"operationId"`    // names the operation; the grant binds OperationRoot(Resource, OperationID)
	OperationClass string `json:"operationClass"` // grant.ValidateOperationClass
	// RequestID is the idempotency key, scoped to the owner: a retry with
	// the same ID returns the same grant while it lives, or its final
	// state; never a second grant. Retry a lost answer with the same one.
	// The Go SDK's Session draws and keeps it: leave it empty there.
	RequestID string `json:"requestId"`
	// TTLMs is the lease's server-side TTL. Optional: 0 means the
	// registry's default (the Go SDK's Session sends its
	// Options.TTLDefault instead); otherwise it must lie in the registry's
	// [TTLMsMin, TTLMsMax].
	TTLMs uint64 `json:"ttlMs,omitempty"`
	// WaitMs is how long to wait, FIFO behind other waiters, for the lease
	// to become free: 0 means fail at once with ErrBusy; larger values are
	// capped at the registry's WaitMsMax. Not part of the request's
	// identity.
	WaitMs uint64 `json:"waitMs,omitempty"`
	// Permits, when set, makes Resource a counting semaphore of that many
	// permits, in [PermitsMin, PermitsMax] (see SlotResource): the grant is
	// on one free slot, its own resource and fence; every acquire of the
	// semaphore must name the same number (ErrPermitsMismatch). 0 (the
	// default): an exclusive lock.
	Permits uint64 `json:"permits,omitempty"`
	// Mode is the lease's mode on a read/write lock: ModeRead ("read")
	// asks for a reader's lease, shared with other readers, on
	// ReadResource(Resource); "" (the default) the exclusive lease, which
	// is the writer's. Part of the request's identity. A read acquire may
	// not name Permits.
	Mode string `json:"mode,omitempty"`
}

// Issued is a grant with its proofs and a fresh status, parsed. For a
// grant whose issuer epoch is revoked, GrantProof and StatusProof are
// empty and Status.State is REVOKED: no proof is ever issued for it.
type Issued struct {
	Grant       *grant.Grant
	GrantProof  string
	Status      *grant.Status
	StatusProof string
	// ExpiresAfterMs, in a HELD answer, is how long after the request
	// reached the registry the lease expires, by the registry's clock; 0
	// when not known (an answer from before the field, or not HELD). The
	// request reached the registry after the client sent it, so a client
	// that counts its deadline from its own send plus ExpiresAfterMs can
	// only be early, never late, by the network delay (and by the skew
	// bound when another replica set the expiry; the client's
	// ExpiryMargin covers both, as it does for a renewal). It is what
	// makes a grant after a long wait usable for its whole TTL: the wait
	// is inside it.
	ExpiresAfterMs int64
	// GateProofs are, for each gate enrolled at the registry whose
	// resources cover the grant's, that gate's own HMAC proofs of Grant
	// and Status (grant.GateProof), in gate-name order; nil when none is
	// enrolled for it, and whenever GrantProof is empty.
	GateProofs []grant.GateProof
}

// Statement is the answer's own statement about the grant: its status
// when it carries one (a retry's, renewal's or status query's answer),
// else a fresh grant's held statement (HELD from IssuedAt until
// HeldUntil); ok is false when it carries neither (no grant, or an
// earlier-form grant answered without a status).
func (is Issued) Statement() (state grant.State, issuedAt, validUntil time.Time, ok bool) {
	switch {
	case is.Status != nil:
		return is.Status.State, is.Status.IssuedAt, is.Status.ValidUntil, true
	case is.Grant != nil && is.Grant.HeldStatement():
		return grant.StateHeld, is.Grant.IssuedAt, is.Grant.HeldUntil, true
	}
	return "", time.Time{}, time.Time{}, false
}

// ResourceInfo is an operator's view of one resource (POST
// /v1/admin/resource).
type ResourceInfo struct {
	Resource         string `json:"resource"`
	HighestFence     uint64 `json:"highestFence"`
	Floor            uint64 `json:"floor"`
	PolicyGeneration uint64 `json:"policyGeneration"`
	HolderLease      string `json:"holderLease"` // "" when free (expiry judged at the read)
	HolderOwner      string `json:"holderOwner"`
	Waiters          int    `json:"waiters"`
	Revision         uint64 `json:"revision"` // store revision of the read
	// FenceGeneration is the registry's fence generation (the high 32
	// bits of every fence it issues now; 0 before the first bump).
	FenceGeneration uint64 `json:"fenceGeneration"`
	// NextFence is the fence the resource's next grant gets unless
	// another is issued first: max(HighestFence, Floor, the range's
	// start) + 1; 0 when the range is used up (a bump is needed).
	NextFence uint64 `json:"nextFence"`
}

// LeaseRequest is POST /v1/renew and POST /v1/release.
type LeaseRequest struct {
	Resource string `json:"resource"`
	Lease    string `json:"lease"`
}

// StatusRequest is POST /v1/status: the grant's canonical lockGrant.v1
// text, as the registry issued it.
type StatusRequest struct {
	Grant string `json:"grant"`
}

// IssuedResponse carries a grant and its status as their canonical text,
// byte for byte what the registry signed, with the proofs. The proofs are
// empty when the grant's issuer epoch is revoked (Status then says
// REVOKED): no proof is ever issued for a revoked epoch.
type IssuedResponse struct {
	Grant       string `json:"grant"`       // lockGrant.v1 text
	GrantProof  string `json:"grantProof"`  // sig:<keyId>:<b64> or mac:…, or ""
	Status      string `json:"status"`      // grantStatus.v1 text
	StatusProof string `json:"statusProof"` // or ""
	// ExpiresAfterMs, in a HELD answer, is how long after the request
	// reached the registry the lease expires (wire.Issued.ExpiresAfterMs);
	// omitted when not known.
	ExpiresAfterMs int64 `json:"expiresAfterMs,omitempty"`
	// GateProofs are the per-gate proofs (wire.Issued.GateProofs); omitted
	// when there are none.
	GateProofs []grant.GateProof `json:"gateProofs,omitempty"`
}

// ReleaseResponse is the answer to a successful POST /v1/release.
type ReleaseResponse struct {
	Resource string      `json:"resource"`
	Lease    string      `json:"lease"`
	State    grant.State `json:"state"` // always RELEASED
}

// RevokeEpochsRequest is POST /v1/admin/revoke-epochs.
type RevokeEpochsRequest struct {
	Below uint64 `json:"below"` // revoke every issuer epoch below this; raise only
	Note  string `json:"note,omitempty"`
}

// RevokeEpochsResponse reports the revoked line now in force.
type RevokeEpochsResponse struct {
	RevokedBelowEpoch uint64 `json:"revokedBelowEpoch"`
}

// PolicyRequest is POST /v1/admin/policy.
type PolicyRequest struct {
	Resource   string `json:"resource"`
	Generation uint64 `json:"generation"` // raise only
	Note       string `json:"note,omitempty"`
}

// FloorRequest is POST /v1/admin/floor.
type FloorRequest struct {
	Resource string `json:"resource"`
	Fence    uint64 `json:"fence"` // every later fence exceeds it; raise only
	// Note says why, for the audit log; optional, at most NoteBytesMax.
	Note string `json:"note,omitempty"`
}

// FenceRangeBumpRequest is POST /v1/admin/fence-range: move every
// resource's next fence above every fence any earlier store or range
// issued, and end every lease granted before.
type FenceRangeBumpRequest struct {
	// Above, when not 0, is a fence the new range must be above: the
	// highest fence any gate reports, or the last fence of another
	// store's range. Optional: by default the registry's clock orders
	// bumps.
	Above uint64 `json:"above,omitempty"`
	// Note says why, for the audit log; optional, at most NoteBytesMax.
	Note string `json:"note,omitempty"`
}

// FenceRange is the registry's fence range (GET /v1/admin/fence-range,
// and the answer to a bump): every fence it issues now is
// Generation<<32 | counter, inside [First, Last].
type FenceRange struct {
	Generation uint64 `json:"generation"` // 0 before the first bump
	First      uint64 `json:"first"`
	Last       uint64 `json:"last"`
	// BumpedAt is the bumping registry's clock at the last bump; absent
	// before the first.
	BumpedAt *time.Time `json:"bumpedAt,omitempty"`
	Revision uint64     `json:"revision"` // store revision of the read or of the bump
	// AheadOfClockMs, after a bump, is how far the generation (Unix
	// seconds) is still ahead of the registry's clock: not 0 only when
	// above (or an earlier generation) pushed it there. A later bump of
	// a store that knows nothing of this one must then be given an
	// above of at least Last.
	AheadOfClockMs int64 `json:"aheadOfClockMs,omitempty"`
}

// ResourceRequest is POST /v1/admin/resource.
type ResourceRequest struct {
	Resource string `json:"resource"`
}

// Health is the body of /healthz and /readyz.
type Health struct {
	Status string `json:"status"` // "ok", or the reason it is not
}

// LockStatus is what an identity allowed to see a resource may know of
// its lock (GET /v1/locks/{resource}, fencegate status): who holds it,
// since when, for how much longer, the fences, and who waits, since when.
// All instants are the registry's clock, in UTC.
type LockStatus struct {
	Resource     string      `json:"resource"`
	Holder       *LockHolder `json:"holder,omitempty"` // nil when free (expiry judged at the read)
	HighestFence uint64      `json:"highestFence"`     // the highest fence issued; the next is above max(this, Floor, the fence range's start)
	Floor        uint64      `json:"floor"`
	// FreeAt, when set, is when lock-delay after an expiry ends: nobody
	// is granted the resource before it.
	FreeAt  *time.Time   `json:"freeAt,omitempty"`
	Waiters []LockWaiter `json:"waiters"` // FIFO order, head first
	// ReadAt is the registry's clock at the read; Revision the store
	// revision it was read at.
	ReadAt   time.Time `json:"readAt"`
	Revision uint64    `json:"revision"`
	// Permits, for a counting semaphore, is its N; its Waiters are the
	// queue across its slots, and Slots each slot's own lock (slot i is
	// Slots[i], resource SlotResource(Resource, i)), read after it. 0 and
	// no Slots for an exclusive lock.
	Permits uint64       `json:"permits,omitempty"`
	Slots   []LockStatus `json:"slots,omitempty"`
	// Readers are the resource's readers (read/write lock): each a lease
	// on ReadResource(Resource) with its own expiry, sharing the lock;
	// omitted when none. Holder is then absent: a writer excludes them.
	Readers []LockHolder `json:"readers,omitempty"`
	// ReadersFrom, when set and ahead, is when readers other than a
	// downgraded writer may be admitted again: every HELD statement of
	// the downgraded write lease has expired by then.
	ReadersFrom *time.Time `json:"readersFrom,omitempty"`
}

// LockHolder is a resource's current lease.
type LockHolder struct {
	Owner          string    `json:"owner"`
	Lease          string    `json:"lease"`
	Fence          uint64    `json:"fence"`
	OperationClass string    `json:"operationClass"`
	Since          time.Time `json:"since"`     // when the lease was granted
	ExpiresAt      time.Time `json:"expiresAt"` // unless renewed first
	// LockSet, when the lease is a member's of a lock set, is the whole
	// set (sorted); omitted for a plain lease.
	LockSet []string `json:"lockSet,omitempty"`
}

// LockWaiter is one queued acquire. Its request ID is not shown: it is
// its owner's idempotency key.
type LockWaiter struct {
	Owner          string `json:"owner"`
	OperationClass string `json:"operationClass"`
	// Since is when it joined the queue (zero when the registry that
	// queued it did not record it).
	Since time.Time `json:"since,omitzero"`
	// LockSet, when the waiter is a lock set's, is the whole set
	// (sorted): it waits for every member at once.
	LockSet []string `json:"lockSet,omitempty"`
	// Read: the waiter asks for a reader's lease (read/write lock).
	Read bool `json:"read,omitempty"`
}

// Left is how long the holder's lease had left at the read (0 when free
// or already over).
func (s LockStatus) Left() time.Duration {
	if s.Holder == nil {
		return 0
	}
	return max(s.Holder.ExpiresAt.Sub(s.ReadAt), 0)
}

// LockList is a page of locks (GET /v1/locks?prefix=&after=&limit=,
// fencegate ls): resources with a record, in name order. Next, when set,
// is the after of the next page.
type LockList struct {
	Locks []LockStatus `json:"locks"`
	Next  string       `json:"next,omitempty"`
}

// BreakRequest is POST /v1/admin/break: end the holder's lease now and
// hand the resource to the next waiter.
type BreakRequest struct {
	Resource string `json:"resource"`
	// Note says why, for the audit log; optional, at most 1 KiB.
	Note string `json:"note,omitempty"`
}

// BreakResponse is the answer to a break: the lease that was ended (empty
// when the resource was already free), every lease the break ended, and
// the lock as it stands after.
type BreakResponse struct {
	// Broken is the named resource's ended lease (for a reader's resource
	// NAME/_read, the first reader's).
	Broken *LockHolder `json:"broken,omitempty"`
	// Ended is every lease the break ended, in one write, each with its
	// resource: one for a lock or a semaphore's slot; every member's of a
	// lock set (a member's break ends the whole set); every reader's for a
	// read/write lock's readers. Empty when nothing was held.
	Ended  []BrokenLease `json:"ended,omitempty"`
	Status LockStatus    `json:"status"`
}

// BrokenLease is one lease a break ended: the resource it was a lease on
// (a reader's is NAME/_read) and its holder.
type BrokenLease struct {
	Resource string     `json:"resource"`
	Holder   LockHolder `json:"holder"`
}
