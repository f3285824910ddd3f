package lockstate

import (
	"fmt"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// Record is one resource's state in the store: its fence sequence, floor,
// policy generation, current holder, lock-delay and FIFO of waiters. The
// decisions read and return Records; they never mutate one in place.
type Record struct {
	// HighestFence is the highest fence ever issued for the resource. The
	// next grant gets max(HighestFence, Floor, the range's start) + 1
	// (nextFence).
	HighestFence uint64 `json:"highestFence"`
	// Floor is raised (never lowered) to the highest fence a resource
	// reports, so a registry restored from an old snapshot cannot issue a
	// fence a gate has already seen.
	Floor uint64 `json:"floor,omitempty"`
	// PolicyGeneration is stamped into every grant; raise only.
	PolicyGeneration uint64 `json:"policyGeneration,omitempty"`
	// Holder is the lease last granted and not yet known to have ended; it
	// may already be expired by the clock (expiry is judged lazily).
	Holder *Holder `json:"holder,omitempty"`
	// FreeAtMs is the earliest instant a new grant may be issued: the
	// release instant, or expiry + LockDelayMs. It also opens the head
	// waiter's claim window.
	FreeAtMs int64 `json:"freeAtMs,omitempty"`
	// Waiters is the FIFO of waiting acquires, head first.
	Waiters []Waiter `json:"waiters,omitempty"`
	// Ended remembers the last EndedLeasesMax ended leases, oldest first.
	Ended []EndedLease `json:"ended,omitempty"`
	// Permits, when non-zero, makes this the record of a counting
	// semaphore of that many permits (wire.SlotResource): it holds the
	// queue across the slots and never a holder or a fence of its own.
	// Set once, by the semaphore's first acquire, and never changed.
	Permits uint64 `json:"permits,omitempty"`
	// Readers are the read/write lock's readers (rwlock.go): each an
	// ordinary lease on wire.ReadResource of the resource, with its own
	// expiry, renewed and released on its own. Never beside a live
	// Holder (a writer excludes them). nil for every other lock.
	Readers []Holder `json:"readers,omitempty"`
	// ReadersFromMs, after a downgrade, is the instant before which no
	// reader but the downgraded writer is admitted: every HELD statement
	// issued for the write lease has expired by then (DecideDowngrade).
	ReadersFromMs int64 `json:"readersFromMs,omitempty"`
}

// Holder is the current lease: the grant (without its backend revision,
// which is the creation revision of its request-ID entry) and its current
// expiry, which renewals move.
type Holder struct {
	Grant GrantBody `json:"grant"`
	// ParamsDigest is the request entry's. No longer needed to end the
	// lease (its entry is not written again), it stays for registries of
	// an older version sharing the store during an upgrade, which copy it
	// into the entry they write at the end.
	ParamsDigest string `json:"paramsDigest"`
	ExpiresAtMs  int64  `json:"expiresAtMs"`
	// Members, when the lease is a lock set's member's, is the whole set
	// (sorted); nil for a plain lease. Shown by status and ls.
	Members []string `json:"members,omitempty"`
}

// Waiter is one queued acquire. It keeps its place until it is granted,
// cancels, or its deadline passes. It carries the acquire's parameters, so
// the transaction that frees the resource can grant it to the head waiter
// at once (a warm handoff in one write).
type Waiter struct {
	Owner     string `json:"owner"`
	RequestID string `json:"requestId"`
	// DeadlineMs is when the ticket leaves the queue: the end of its wait
	// plus Limits.WaiterGraceMs, time for the same request to ask again
	// and keep its place.
	DeadlineMs int64 `json:"deadlineMs"`
	// PollUntilMs is when the acquire that holds the ticket stops
	// listening (the end of its wait): a release hands the lease over in
	// its own write only to a head that is listening. 0 in records from
	// before it existed: DeadlineMs.
	PollUntilMs int64 `json:"pollUntilMs,omitempty"`
	// JoinedMs is when the ticket joined the queue; asking again with the
	// same request keeps it. 0 in records from before it existed.
	JoinedMs       int64  `json:"joinedMs,omitempty"`
	OperationRoot  string `json:"operationRoot"`
	OperationClass string `json:"operationClass"`
	TTLMs          uint64 `json:"ttlMs"`
	ParamsDigest   string `json:"paramsDigest"`
	// SeenMs is the last instant the waiter showed it is alive: when it
	// joined, when its retry moved its deadline, or when it stamped itself
	// while a free resource's head was slow to claim (see
	// skipVanishedWaiters). 0 in records from before it existed.
	SeenMs int64 `json:"seenMs,omitempty"`
	// Members, on a lock set's ticket, is the whole set (sorted): the
	// ticket stands in every member's queue, under that member's request
	// ID (wire.MemberRequestID), and is granted only with every other
	// member, by the set's own acquire (DecideSetAcquire), never by a
	// release's handOff. nil on a plain ticket.
	Members []string `json:"members,omitempty"`
	// SetTTLMs is a set ticket's TTL; its TTLMs is 0, which a registry of
	// a version before lock sets reads as "nobody listening" and never
	// hands the member alone to.
	SetTTLMs uint64 `json:"setTtlMs,omitempty"`
	// Read: the ticket asks for a reader's lease (wire.ModeRead); a
	// ticket without it asks for the exclusive one (a writer's).
	Read bool `json:"read,omitempty"`
}

// EndedLease is a lease that ended, and how.
type EndedLease struct {
	Lease string      `json:"lease"`
	Owner string      `json:"owner"`
	State grant.State `json:"state"`
	AtMs  int64       `json:"atMs"`
	// Broken: an operator ended it (State EXPIRED: its status proofs say
	// it is over, as for an expiry).
	Broken bool `json:"broken,omitempty"`
}

// GrantBody is a lockGrant.v1 without its BackendRevision, which is only
// known once the granting transaction commits.
type GrantBody struct {
	Resource         string `json:"resource"`
	Owner            string `json:"owner"`
	RequestID        string `json:"requestId"`
	Lease            string `json:"lease"`
	OperationRoot    string `json:"operationRoot"`
	OperationClass   string `json:"operationClass"`
	FenceToken       uint64 `json:"fenceToken"`
	PolicyGeneration uint64 `json:"policyGeneration"`
	IssuerEpoch      uint64 `json:"issuerEpoch"`
	TTLMs            uint64 `json:"ttlMs"`
	IssuedAtMs       int64  `json:"issuedAtMs"`
	// HeldUntilMs is the grant's own HELD statement (lockGrant.v1
	// heldUntil); 0 for the earlier form without one. Stored, never
	// derived from the configuration, so every replica and every retry
	// re-creates byte for byte the grant that was signed.
	HeldUntilMs int64 `json:"heldUntilMs,omitempty"`
}

// Grant completes the body with the backend revision and validates it.
func (b GrantBody) Grant(backendRevision uint64) (*grant.Grant, error) {
	root, err := grant.ParseDigest(b.OperationRoot)
	if err != nil {
		return nil, fmt.Errorf("%w: grant operation root: %v", wire.ErrCorrupt, err)
	}
	g := &grant.Grant{
		Resource: b.Resource, Owner: b.Owner, RequestID: b.RequestID, Lease: b.Lease,
		OperationRoot: root, OperationClass: b.OperationClass,
		FenceToken: b.FenceToken, BackendRevision: backendRevision,
		PolicyGeneration: b.PolicyGeneration, IssuerEpoch: b.IssuerEpoch, TTLMs: b.TTLMs,
		IssuedAt:  fromMs(b.IssuedAtMs),
		ExpiresAt: fromMs(b.IssuedAtMs + int64(b.TTLMs)),
	}
	if b.HeldUntilMs != 0 {
		g.HeldUntil = fromMs(b.HeldUntilMs)
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("%w: stored grant: %w", wire.ErrCorrupt, err)
	}
	return g, nil
}

// RequestEntry is the request-ID index entry of one granted acquire. It is
// created in the transaction that grants, and that transaction's revision
// is the grant's BackendRevision. It is written once: how and when its
// lease ended is read from the resource's record (EntryState, endedAtMs),
// so a cycle puts its record twice and its entry once.
type RequestEntry struct {
	Grant GrantBody `json:"grant"`
	// ParamsDigest binds the acquire's parameters; a retry with other
	// parameters is ErrRequestMismatch.
	ParamsDigest string `json:"paramsDigest"`
	// State is HELD as written at grant. Registries of an older version
	// wrote the entry again when the lease ended, with its final state;
	// such an entry's State and EndedAtMs are final and read as they are.
	State grant.State `json:"state"`
	// EndedAtMs is when the lease ended, in an entry written again at its
	// end (0 otherwise); retention counts from here.
	EndedAtMs int64 `json:"endedAtMs"`
}

// Settings is the registry-wide state shared by all replicas. Every
// write compares the settings' revision, so a decision made before a
// change of the settings never commits after it.
type Settings struct {
	// RevokedBelowEpoch: grants of lower issuer epochs report REVOKED and
	// get no proofs. Raise only.
	RevokedBelowEpoch uint64 `json:"revokedBelowEpoch"`
	// FenceGeneration is the high half of every fence issued now (see
	// FenceRangeOf); 0 until the first bump. Raise only: a bump
	// (BumpFenceRange) moves it above every generation any earlier
	// store or range issued in, and ends every lease granted below it.
	FenceGeneration uint64 `json:"fenceGeneration,omitempty"`
	// FenceBumpedAtMs is the bumping clock's instant at the last bump.
	FenceBumpedAtMs int64 `json:"fenceBumpedAtMs,omitempty"`
}

// Clone returns a deep copy, so a decision never aliases its input. A nil
// record clones to an empty one.
func (r *Record) Clone() *Record {
	if r == nil {
		return &Record{}
	}
	c := *r
	if r.Holder != nil {
		h := *r.Holder
		c.Holder = &h
	}
	c.Waiters = append([]Waiter(nil), r.Waiters...)
	if r.Readers != nil {
		c.Readers = append([]Holder(nil), r.Readers...)
	}
	c.Ended = append([]EndedLease(nil), r.Ended...)
	return &c
}

// EndedLeasesMax is how many ended leases a resource record remembers, so
// a retried Release is idempotent, Renew can say EXPIRED rather than
// NOT_HOLDER, and a request's entry, written once, answers how its lease
// ended. An older lease answers EXPIRED through the request-ID index
// (QueryRequest, a retried Acquire): ended, whatever ended it. Kept small:
// the record is rewritten on every acquire and release, and its size is
// paid in every fsync'd write.
const EndedLeasesMax = 2

// RequestKey names one request-ID entry: request IDs are scoped to their
// owner, so one owner can neither read nor collide with another's.
type RequestKey struct {
	Owner     string
	RequestID string
}

// Less orders keys by owner, then request ID.
func (k RequestKey) Less(o RequestKey) bool {
	if k.Owner != o.Owner {
		return k.Owner < o.Owner
	}
	return k.RequestID < o.RequestID
}
