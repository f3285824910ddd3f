// This file proves the read/write lock's decisions at fixed instants:
// readers share, a writer waits for them, a queued writer holds new
// readers back, a run of readers at the head is admitted together, each
// reader renews and ends on its own, and a downgrade keeps the fence,
// lets no queued writer in and holds other readers back until the write
// lease's HELD statements have expired.
package lockstate

import (
	"errors"
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

func rwIn(owner, id string, read, wait bool, now int64) AcquireInput {
	in := input(owner, id, wait, now+20_000)
	in.Req.Resource = "rw/1"
	if read {
		in.Req.Mode = wire.ModeRead
	}
	return in
}

// rwStep decides in on rec at now and returns the decision; it fails t on
// an error.
func rwStep(t *testing.T, rec *Record, in AcquireInput, now int64) AcquireDecision {
	t.Helper()
	d, err := DecideAcquire(rec, nil, Settings{}, in, now, testLimits())
	if err != nil {
		t.Fatalf("%s: %v", in.Req.RequestID, err)
	}
	if d.Record == nil {
		d.Record = rec
	}
	return d
}

func TestReadersShareWriterExcludes(t *testing.T) {
	d := rwStep(t, &Record{}, rwIn("a", "r1", true, false, t0), t0)
	if d.Outcome != AcquireGranted || d.Body.Resource != "rw/1/_read" || d.Body.FenceToken != 1 || d.Record.HighestFence != 1 {
		t.Fatalf("first reader: %+v", d)
	}
	d = rwStep(t, d.Record, rwIn("b", "r2", true, false, t0+1), t0+1)
	if d.Outcome != AcquireGranted || len(d.Record.Readers) != 2 || d.Body.FenceToken != 1 {
		t.Fatalf("second reader does not share: %+v", d)
	}
	if _, err := DecideAcquire(d.Record, nil, Settings{}, rwIn("w", "w1", false, false, t0+2), t0+2, testLimits()); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("writer beside readers: %v", err)
	}
	// A queued writer holds a new reader back (writer preference).
	q := rwStep(t, d.Record, rwIn("w", "w1", false, true, t0+2), t0+2)
	if q.Outcome != AcquireQueued {
		t.Fatalf("writer not queued: %+v", q)
	}
	r3 := rwStep(t, q.Record, rwIn("c", "r3", true, true, t0+3), t0+3)
	if r3.Outcome != AcquireQueued || len(r3.Record.Waiters) != 2 {
		t.Fatalf("a reader got past a queued writer: %+v", r3)
	}
	// The readers release: the last one's release hands the writer the
	// lease; its fence is above the readers'.
	rec := r3.Record
	for _, h := range d.Record.Readers {
		rel, err := DecideRelease(rec, Settings{}, h.Grant.Owner, h.Grant.Lease, t0+4, testLimits(), none)
		if err != nil {
			t.Fatal(err)
		}
		rec = rel.Record
	}
	if rec.Holder == nil || rec.Holder.Grant.Owner != "w" || rec.Holder.Grant.FenceToken != 2 || len(rec.Readers) != 0 {
		t.Fatalf("writer not handed the lease after the readers: %+v", rec)
	}
	// The writer's release hands every reader at the head the lease at
	// once, each with the writer's fence.
	rec.Waiters = append(rec.Waiters, rwIn("e", "r4", true, true, t0+4).ticket("sha256:p", t0+4, testLimits()))
	rel, err := DecideRelease(rec, Settings{}, "w", rec.Holder.Grant.Lease, t0+5, testLimits(), none)
	if err != nil {
		t.Fatal(err)
	}
	if len(rel.Entries) != 2 || len(rel.Record.Readers) != 2 || rel.Record.Readers[0].Grant.FenceToken != 2 || rel.Record.Readers[1].Grant.FenceToken != 2 {
		t.Fatalf("run of readers not admitted together: %+v", rel.Record)
	}
}

func TestReaderLeasesAreTheirOwn(t *testing.T) {
	lim := testLimits()
	a := rwStep(t, &Record{HighestFence: 7}, rwIn("a", "r1", true, false, t0), t0)
	b := rwStep(t, a.Record, rwIn("b", "r2", true, false, t0+5000), t0+5000)
	if a.Body.FenceToken != 7 || b.Body.FenceToken != 7 {
		t.Fatalf("readers do not carry the last writer's fence: %d %d", a.Body.FenceToken, b.Body.FenceToken)
	}
	rn, err := DecideRenew(b.Record, Settings{}, "b", b.Body.Lease, t0+9000, lim)
	if err != nil {
		t.Fatal(err)
	}
	if rn.Record.Readers[0].ExpiresAtMs != t0+10_000 || rn.Record.Readers[1].ExpiresAtMs != t0+19_000 {
		t.Fatalf("a renewal moved another reader's expiry: %+v", rn.Record.Readers)
	}
	// a's share ends at its own expiry, b's lives on; a's entry says so.
	next, _ := Normalize(rn.Record, Settings{}, t0+10_000, lim)
	if len(next.Readers) != 1 || next.Readers[0].Grant.Owner != "b" || next.FreeAtMs != t0+10_000+int64(lim.LockDelayMs) {
		t.Fatalf("a dead reader's share did not end by its TTL alone: %+v", next)
	}
	entryA := &RequestEntry{Grant: a.Body, State: grant.StateHeld}
	if st := EntryState(next, entryA, Settings{}, t0+10_000); st != grant.StateExpired {
		t.Fatalf("expired reader's entry: %s", st)
	}
	entryB := &RequestEntry{Grant: b.Body, State: grant.StateHeld}
	if st := EntryState(next, entryB, Settings{}, t0+10_000); st != grant.StateHeld {
		t.Fatalf("live reader's entry: %s", st)
	}
	if _, err := DecideRenew(next, Settings{}, "a", a.Body.Lease, t0+10_001, lim); !errors.Is(err, wire.ErrLeaseExpired) {
		t.Fatalf("renewing an expired reader: %v", err)
	}
	if _, err := DecideRenew(next, Settings{}, "x", b.Body.Lease, t0+10_001, lim); !errors.Is(err, wire.ErrNotHolder) {
		t.Fatalf("renewing another owner's reader: %v", err)
	}
}

func TestReadModeRules(t *testing.T) {
	lim := testLimits()
	for name, req := range map[string]wire.AcquireRequest{
		"reader resource":  {Resource: "rw/1/_read", OperationID: "o", OperationClass: "c", RequestID: "r"},
		"read of a reader": {Resource: "rw/1/_read", Mode: wire.ModeRead, OperationID: "o", OperationClass: "c", RequestID: "r"},
		"read semaphore":   {Resource: "rw/1", Mode: wire.ModeRead, Permits: 2, OperationID: "o", OperationClass: "c", RequestID: "r"},
		"unknown mode":     {Resource: "rw/1", Mode: "write", OperationID: "o", OperationClass: "c", RequestID: "r"},
	} {
		if _, err := NewAcquireInput("o", req, t0, lim); !errors.Is(err, wire.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if err := wire.ValidateLockSet([]string{"a", "a/_read"}); !errors.Is(err, wire.ErrInvalid) {
		t.Errorf("lock set with a reader resource: %v", err)
	}
	// A retry of a reader's request as a writer is another request.
	d := rwStep(t, &Record{}, rwIn("a", "r1", true, false, t0), t0)
	own := &d.Entries[0].Entry
	if _, err := DecideAcquire(d.Record, own, Settings{}, rwIn("a", "r1", false, false, t0), t0+1, lim); !errors.Is(err, wire.ErrRequestMismatch) {
		t.Errorf("writer retry of a reader's request: %v", err)
	}
	if x, err := DecideAcquire(d.Record, own, Settings{}, rwIn("a", "r1", true, false, t0), t0+1, lim); err != nil || x.Outcome != AcquireExisting {
		t.Errorf("reader retry: %+v %v", x, err)
	}
}

func TestDowngrade(t *testing.T) {
	lim := testLimits()
	w := rwStep(t, &Record{HighestFence: 4}, rwIn("w", "w1", false, false, t0), t0)
	rec := w.Record
	// a writer and a reader queue behind the holding writer
	rec = rwStep(t, rec, rwIn("x", "w2", false, true, t0+10), t0+10).Record
	rec = rwStep(t, rec, rwIn("r", "r1", true, true, t0+20), t0+20).Record
	in, err := NewDowngradeInput("w", wire.DowngradeRequest{Resource: "rw/1", Lease: w.Body.Lease, RequestID: "w1-read"})
	if err != nil {
		t.Fatal(err)
	}
	at := t0 + 1000
	dg, err := DecideDowngrade(rec, nil, Settings{}, in, at, lim)
	if err != nil {
		t.Fatal(err)
	}
	n := dg.Record
	if n.Holder != nil || len(n.Readers) != 1 || dg.Body.FenceToken != 5 || dg.Body.Resource != "rw/1/_read" || dg.Body.Owner != "w" {
		t.Fatalf("downgrade: %+v", dg)
	}
	if e, ok := findEnded(n, w.Body.Lease); !ok || e.State != grant.StateReleased {
		t.Fatalf("write lease not ended RELEASED: %+v", n.Ended)
	}
	wantFrom := at + int64(lim.StatusProofTTLMs+lim.ClockSkewMaxMs)
	if n.ReadersFromMs != wantFrom {
		t.Fatalf("ReadersFromMs %d, want %d", n.ReadersFromMs, wantFrom)
	}
	// The queued writer stays queued (a reader holds); the queued reader
	// waits behind it, and a new reader waits anyway until ReadersFromMs.
	if x := rwStep(t, n, rwIn("x", "w2", false, true, at), at+1); x.Outcome != AcquireQueued {
		t.Fatalf("a queued writer got in after the downgrade: %+v", x)
	}
	fresh := &Record{HighestFence: n.HighestFence, Readers: n.Readers, ReadersFromMs: n.ReadersFromMs, FreeAtMs: n.FreeAtMs, Ended: n.Ended}
	if x := rwStep(t, fresh, rwIn("y", "r9", true, true, at), wantFrom-1); x.Outcome != AcquireQueued {
		t.Fatalf("a reader admitted while the write lease's statements are fresh: %+v", x)
	}
	if x := rwStep(t, fresh, rwIn("y", "r9", true, true, at), wantFrom); x.Outcome != AcquireGranted || x.Body.FenceToken != 5 {
		t.Fatalf("a reader not admitted once they expired: %+v", x)
	}
	// A retry answers the same reader's grant; a second downgrade of the
	// ended write lease under another request ID is refused.
	own := &dg.Entries[0].Entry
	if x, err := DecideDowngrade(n, own, Settings{}, in, at+5, lim); err != nil || !x.Existing {
		t.Fatalf("downgrade retry: %+v %v", x, err)
	}
	in2 := in
	in2.Req.RequestID = "other"
	if _, err := DecideDowngrade(n, nil, Settings{}, in2, at+5, lim); !errors.Is(err, wire.ErrNotHolder) {
		t.Fatalf("downgrading a released write lease: %v", err)
	}
	// A statement never outlives its lease: near the expiry, ReadersFromMs
	// is the expiry.
	late, err := DecideDowngrade(rec, nil, Settings{}, in, t0+9_800, lim)
	if err != nil || late.Record.ReadersFromMs != t0+10_000 {
		t.Fatalf("late downgrade: %+v %v", late.Record, err)
	}
}
