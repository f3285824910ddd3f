// This file proves that a request entry written once, at grant, answers
// its lease's end from the record: HELD only while it is the holder, the
// state Ended remembers, EXPIRED once it fell out of Ended (never HELD),
// and the final state of an entry an older registry wrote again; and that
// retention counts from an instant no earlier than the real end.
package lockstate

import (
	"fmt"
	"testing"

	"github.com/fencegate/fencegate/grant"
)

// cycleRecord grants and releases n leases on one record, each lasting
// 1 s, and returns the record and each lease's entry as written at grant.
func cycleRecord(t *testing.T, n int) (*Record, []RequestEntry) {
	t.Helper()
	lim := testLimits()
	rec, now := &Record{}, t0
	var entries []RequestEntry
	for i := range n {
		d, err := DecideAcquire(rec, nil, Settings{}, input("a", fmt.Sprint("r", i), false, 0), now, lim)
		if err != nil || d.Outcome != AcquireGranted || len(d.Entries) != 1 {
			t.Fatalf("grant %d: %v %+v", i, err, d)
		}
		entries = append(entries, d.Entries[0].Entry)
		now += 1000
		rel, err := DecideRelease(d.Record, Settings{}, "a", d.Body.Lease, now, lim, none)
		if err != nil || len(rel.Entries) != 0 {
			t.Fatalf("release %d: %v, entries %+v", i, err, rel.Entries)
		}
		rec = rel.Record
	}
	return rec, entries
}

func TestEntryStateFromRecord(t *testing.T) {
	lim := testLimits()
	rec, entries := cycleRecord(t, 4) // leases 0 and 1 fell out of Ended
	now := t0 + 10_000
	for i, want := range []grant.State{grant.StateExpired, grant.StateExpired, grant.StateReleased, grant.StateReleased} {
		if got := EntryState(rec, &entries[i], Settings{}, now); got != want {
			t.Errorf("lease %d: %s, want %s", i, got, want)
		}
	}
	// Ended at (i+1) s after t0; a fell-out lease is bounded by the oldest
	// remembered end plus the skew, never earlier than its real end.
	for i, want := range []int64{t0 + 3000, t0 + 3000, t0 + 3000, t0 + 4000} {
		at, ok := endedAtMs(rec, &entries[i], lim)
		if !ok || at < t0+int64(i+1)*1000 || at != want+int64(lim.ClockSkewMaxMs)*b2i(i < 2) {
			t.Errorf("lease %d ended at %d (%v), want %d", i, at-t0, ok, want-t0)
		}
	}
	// The holder: HELD until its expiry, then EXPIRED with no write; never
	// counted as ended for retention until a write says so.
	h := held("b", rec.HighestFence+1, now)
	own := RequestEntry{Grant: h.Holder.Grant, ParamsDigest: h.Holder.ParamsDigest, State: grant.StateHeld}
	if got := EntryState(h, &own, Settings{}, now); got != grant.StateHeld {
		t.Errorf("holder: %s", got)
	}
	if got := EntryState(h, &own, Settings{}, h.Holder.ExpiresAtMs); got != grant.StateExpired {
		t.Errorf("holder past expiry: %s", got)
	}
	if _, ok := endedAtMs(h, &own, lim); ok || !Retained(h, &own, now+int64(lim.RequestRetentionMs)*2, lim) {
		t.Error("the holder's entry counts as ended")
	}
	// An entry newer than the record it is judged on (a restored or
	// imported record): not HELD, and not placed, so kept.
	if got := EntryState(rec, &own, Settings{}, now); got != grant.StateExpired {
		t.Errorf("entry newer than its record: %s", got)
	}
	if _, ok := endedAtMs(rec, &own, lim); ok {
		t.Error("an entry newer than its record was placed")
	}
	// An entry an older registry wrote again at its end keeps what it says.
	old := entries[0]
	old.State, old.EndedAtMs = grant.StateReleased, t0+1000
	if got, _ := endedAtMs(rec, &old, lim); EntryState(rec, &old, Settings{}, now) != grant.StateReleased || got != t0+1000 {
		t.Errorf("entry written again: %s at %d", EntryState(rec, &old, Settings{}, now), got)
	}
	// Revocation outranks all.
	if got := EntryState(h, &own, Settings{RevokedBelowEpoch: 99}, now); got != grant.StateRevoked {
		t.Errorf("revoked: %s", got)
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
