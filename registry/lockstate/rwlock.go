package lockstate

import (
	"fmt"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// A read/write lock NAME is NAME's one record: its writer is the Holder
// (the exclusive lease, an ordinary grant with the next fence), its
// readers are Readers (each an ordinary lease on wire.ReadResource(NAME)
// with its own expiry, carrying the fence of the last writer it saw:
// HighestFence at its grant). Every decision is one compare-and-swap on
// that record. The rules (model/rwlock.pml checks them, and the
// property test of this package):
//
//   - A writer excludes: it is granted only when no writer and no reader
//     holds (occupied), lock-delay is over, and it is the head of the
//     queue (or the queue is empty).
//   - Readers share: a reader is granted when no writer holds, lock-delay
//     is over, no downgrade's statements are still fresh (ReadersFromMs),
//     and every ticket ahead of it in the queue is a reader's. So a run
//     of readers at the head of the queue is admitted together, and a
//     queued writer blocks every reader behind it (writer preference);
//     otherwise the queue is FIFO, and nobody starves: a writer waits
//     only for the readers holding when it reached the head, a reader
//     only for the writers ahead of it.
//   - Each reader renews and releases its own lease; a dead reader's
//     share ends at its own expiry (and opens lock-delay, as a writer's).
//   - A downgrade (DecideDowngrade) is one write: the write lease ends
//     and its holder gets a reader's lease with the same fence, so no
//     queued writer gets in between. Other readers wait until every HELD
//     statement issued for the write lease has expired: until then a
//     write under it would still be accepted at the gate (its fence is
//     the gate's highest), and they would read while it lands.

// occupied reports whether anyone holds rec: a writer or a reader
// (expiry not judged: normalize first).
func occupied(rec *Record) bool { return rec.Holder != nil || len(rec.Readers) > 0 }

// Read reports whether the acquire asks for a reader's lease.
func (in AcquireInput) Read() bool { return in.Req.Mode == wire.ModeRead }

// grantResource is the resource the acquire's grant names: the reader's
// resource for a read acquire, the requested one otherwise.
func (in AcquireInput) grantResource() string {
	if in.Read() {
		return wire.ReadResource(in.Req.Resource)
	}
	return in.Req.Resource
}

// readerMayEnter reports whether a reader whose ticket is at idx in rec
// (-1: none) may be granted at now: no writer, lock-delay over, no
// downgrade's statements fresh, and only readers' tickets ahead of it.
func readerMayEnter(rec *Record, idx int, now int64) bool {
	if rec.Holder != nil || now < rec.FreeAtMs || now < rec.ReadersFromMs {
		return false
	}
	ahead := rec.Waiters
	if idx >= 0 {
		ahead = rec.Waiters[:idx]
	}
	for _, w := range ahead {
		if !w.Read {
			return false
		}
	}
	return true
}

// claimFrom is when the head of rec's queue could first claim it once
// nobody holds it: FreeAtMs, or for a reader's ticket not before
// ReadersFromMs. The head's claim window (skipVanishedWaiters) counts
// from here, so a reader held back by a downgrade is never taken for a
// vanished one.
func claimFrom(rec *Record) int64 {
	if len(rec.Waiters) > 0 && rec.Waiters[0].Read {
		return max(rec.FreeAtMs, rec.ReadersFromMs)
	}
	return rec.FreeAtMs
}

// writerMayEnter reports whether a writer whose ticket is at idx in rec
// (-1: none) may be granted at now: nobody holds, lock-delay over, and
// it is the head (or nobody waits).
func writerMayEnter(rec *Record, idx int, now int64) bool {
	return !occupied(rec) && now >= rec.FreeAtMs && (idx == 0 || idx < 0 && len(rec.Waiters) == 0)
}

// endReaders ends every reader of rec (a private copy) whose lease ended
// by now (leaseEnds), and reports whether any did.
func endReaders(rec *Record, set Settings, now int64, lim Limits) bool {
	if len(rec.Readers) == 0 {
		return false
	}
	kept := rec.Readers[:0:0]
	for i := range rec.Readers {
		h := &rec.Readers[i]
		state, at, freeAt, bumped := leaseEnds(h, set, now, lim)
		if state == "" {
			kept = append(kept, *h)
			continue
		}
		appendEnded(rec, h, state, at)
		rec.Ended[len(rec.Ended)-1].Broken = bumped
		rec.FreeAtMs = max(rec.FreeAtMs, freeAt)
	}
	if len(kept) == len(rec.Readers) {
		return false
	}
	if len(kept) == 0 {
		kept = nil
	}
	rec.Readers = kept
	return true
}

// readerFence is the fence a reader granted on next carries: the last
// writer's (HighestFence). Before any writer in the current fence range
// (none yet, or a bump ended the range) there is none to carry, and a
// grant's fence is at least 1: the reader then takes the range's next
// fence as HighestFence, which every later writer's fence is above.
func readerFence(name string, next *Record, set Settings) (uint64, error) {
	if next.HighestFence != 0 && !endsWithBump(next.HighestFence, set) {
		return next.HighestFence, nil
	}
	fence, err := nextFence(name, next, set)
	if err != nil {
		return 0, err
	}
	next.HighestFence = fence
	return fence, nil
}

// grantRead makes the ticket t (a reader's, on the lock name) a reader of
// next (a private copy) and returns its grant and new entry, as
// grantLease does for a writer. idx is t's queue position, or -1.
func grantRead(next *Record, name string, set Settings, t Waiter, idx int, now int64, lim Limits) (GrantBody, EntryPut, error) {
	fence, err := readerFence(name, next, set)
	if err != nil {
		return GrantBody{}, EntryPut{}, err
	}
	resource := wire.ReadResource(name)
	body := GrantBody{
		Resource: resource, Owner: t.Owner, RequestID: t.RequestID,
		Lease:         leaseID(resource, t.Owner, t.RequestID, fence, now),
		OperationRoot: t.OperationRoot, OperationClass: t.OperationClass,
		FenceToken: fence, PolicyGeneration: next.PolicyGeneration, IssuerEpoch: lim.IssuerEpoch,
		TTLMs: t.TTLMs, IssuedAtMs: now, HeldUntilMs: heldUntilMs(now, t.TTLMs, lim),
	}
	next.Readers = append(next.Readers, Holder{Grant: body, ParamsDigest: t.ParamsDigest, ExpiresAtMs: now + int64(t.TTLMs)})
	if idx >= 0 {
		next.Waiters = append(next.Waiters[:idx:idx], next.Waiters[idx+1:]...)
	}
	return body, EntryPut{
		Key:   RequestKey{Owner: t.Owner, RequestID: t.RequestID},
		Entry: RequestEntry{Grant: body, ParamsDigest: t.ParamsDigest, State: grant.StateHeld},
	}, nil
}

// grantTicket grants t, at idx in next's queue (-1: none), the lease it
// asks for: a reader's or the writer's.
func grantTicket(next *Record, name string, set Settings, t Waiter, idx int, now int64, lim Limits) (GrantBody, EntryPut, error) {
	if t.Read {
		return grantRead(next, name, set, t, idx, now, lim)
	}
	return grantLease(next, name, set, t, idx, now, lim)
}

// readerIndex is the position of the reader whose lease is lease, or -1.
func readerIndex(rec *Record, lease string) int {
	for i := range rec.Readers {
		if rec.Readers[i].Grant.Lease == lease {
			return i
		}
	}
	return -1
}

// holdingRequest reports whether (owner, requestID) holds rec, as its
// writer or as a reader (expiry not judged).
func holdingRequest(rec *Record, key RequestKey) bool {
	is := func(h *Holder) bool { return h.Grant.Owner == key.Owner && h.Grant.RequestID == key.RequestID }
	if rec.Holder != nil && is(rec.Holder) {
		return true
	}
	for i := range rec.Readers {
		if is(&rec.Readers[i]) {
			return true
		}
	}
	return false
}

// removeReader ends the reader at i of rec (a private copy) in state at
// now.
func removeReader(rec *Record, i int, state grant.State, now int64) {
	h := rec.Readers[i]
	rec.Readers = append(rec.Readers[:i:i], rec.Readers[i+1:]...)
	if len(rec.Readers) == 0 {
		rec.Readers = nil
	}
	appendEnded(rec, &h, state, now)
}

// DowngradeInput is a validated downgrade: owner's write lease Lease on
// Resource becomes a reader's lease granted under RequestID.
type DowngradeInput struct {
	Owner string
	Req   wire.DowngradeRequest
}

// NewDowngradeInput validates owner's downgrade req.
func NewDowngradeInput(owner string, req wire.DowngradeRequest) (DowngradeInput, error) {
	for _, c := range []struct {
		field string
		err   error
	}{
		{"owner", grant.ValidateOwner(owner)},
		{"resource", grant.ValidateResource(req.Resource)},
		{"lease", grant.ValidateToken(req.Lease)},
		{"requestId", grant.ValidateToken(req.RequestID)},
	} {
		if c.err != nil {
			return DowngradeInput{}, fmt.Errorf("%w: %s: %v", wire.ErrInvalid, c.field, c.err)
		}
	}
	if wire.ReservedRequestID(req.RequestID) {
		return DowngradeInput{}, fmt.Errorf("%w: requestId: request IDs beginning %q are reserved for the members of lock sets", wire.ErrInvalid, wire.SetRequestIDPrefix)
	}
	if err := wire.ValidateMode(wire.AcquireRequest{Resource: req.Resource, Mode: wire.ModeRead}); err != nil {
		return DowngradeInput{}, err
	}
	return DowngradeInput{Owner: owner, Req: req}, nil
}

// Key is the reader's request entry's key.
func (in DowngradeInput) Key() RequestKey {
	return RequestKey{Owner: in.Owner, RequestID: in.Req.RequestID}
}

// downgradeDigest binds a downgrade's request: the reader's resource and
// the write lease it came from, tagged so it equals no acquire's.
func downgradeDigest(in DowngradeInput) string {
	return paramsDigest(wire.ReadResource(in.Req.Resource), "downgrade", in.Req.Lease, 0)
}

// DowngradeDecision is a downgrade's decision.
type DowngradeDecision struct {
	// Existing: the request already has its reader's grant; answer from
	// its entry (a retry). Record and Entries are then empty.
	Existing bool
	Record   *Record
	Entries  []EntryPut
	Body     GrantBody // the reader's grant
}

// DecideDowngrade turns owner's live write lease on rec into a reader's
// lease, in one write: the write lease ends (RELEASED: its holder gave it
// up) and the same owner becomes a reader under in.Req.RequestID, with
// the write lease's fence, TTL, operation root and class, expiring a TTL
// from now. No queued writer can get in between (the reader holds), and
// ReadersFromMs holds every other reader back until every HELD statement
// issued for the write lease has expired: no statement is valid past
// its issue instant + StatusProofTTLMs, nor past its lease's expiry, and
// a replica issuing it may read a clock up to ClockSkewMaxMs ahead.
func DecideDowngrade(rec *Record, own *RequestEntry, set Settings, in DowngradeInput, now int64, lim Limits) (DowngradeDecision, error) {
	if own != nil {
		if own.ParamsDigest != downgradeDigest(in) {
			return DowngradeDecision{}, fmt.Errorf("%w: request %s was issued for other parameters", wire.ErrRequestMismatch, in.Req.RequestID)
		}
		return DowngradeDecision{Existing: true}, nil
	}
	if lim.IssuerEpoch < set.RevokedBelowEpoch {
		return DowngradeDecision{}, fmt.Errorf("%w: this registry's epoch %d is below %d", wire.ErrEpochRevoked, lim.IssuerEpoch, set.RevokedBelowEpoch)
	}
	next, _ := Normalize(rec, set, now, lim)
	h := next.Holder
	if h == nil || h.Grant.Lease != in.Req.Lease {
		return DowngradeDecision{}, endedError(next, in.Owner, in.Req.Lease)
	}
	if h.Grant.Owner != in.Owner {
		return DowngradeDecision{}, fmt.Errorf("%w: lease %s belongs to another owner", wire.ErrNotHolder, in.Req.Lease)
	}
	if len(h.Members) > 0 {
		return DowngradeDecision{}, fmt.Errorf("%w: lease %s is a lock set's member: a set has no readers", wire.ErrInvalid, in.Req.Lease)
	}
	write := *h
	endHolder(next, grant.StateReleased, now)
	next.ReadersFromMs = max(next.ReadersFromMs, min(now+int64(lim.StatusProofTTLMs+lim.ClockSkewMaxMs), write.ExpiresAtMs))
	resource := wire.ReadResource(in.Req.Resource)
	body := GrantBody{
		Resource: resource, Owner: in.Owner, RequestID: in.Req.RequestID,
		Lease:         leaseID(resource, in.Owner, in.Req.RequestID, write.Grant.FenceToken, now),
		OperationRoot: write.Grant.OperationRoot, OperationClass: write.Grant.OperationClass,
		FenceToken: write.Grant.FenceToken, PolicyGeneration: next.PolicyGeneration, IssuerEpoch: lim.IssuerEpoch,
		TTLMs: write.Grant.TTLMs, IssuedAtMs: now, HeldUntilMs: heldUntilMs(now, write.Grant.TTLMs, lim),
	}
	digest := downgradeDigest(in)
	next.Readers = append(next.Readers, Holder{Grant: body, ParamsDigest: digest, ExpiresAtMs: now + int64(write.Grant.TTLMs)})
	return DowngradeDecision{
		Record: next, Body: body,
		Entries: []EntryPut{{Key: in.Key(), Entry: RequestEntry{Grant: body, ParamsDigest: digest, State: grant.StateHeld}}},
	}, nil
}
