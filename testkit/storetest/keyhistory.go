package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// The gate key history's rows: one item under the store's revisions,
// read linearizably, replaced only by a compare-and-swap on its stored
// bytes (absent: never written), a failed compare answering the history
// now, and concurrent writers losing no update: the property that keeps
// two replicas loading gate keys at once from both committing.

// keyUse is a history entry for key id of gate g, its digest derived
// from secret.
func keyUse(id, g, secret string, st grant.KeyState) registry.GateKeyUse {
	sum := sha256.Sum256([]byte(secret))
	return registry.GateKeyUse{KeyID: id, Gate: g, Digest: "sha256:" + hex.EncodeToString(sum[:]), State: st}
}

func mustReadKeys(t *testing.T, s registry.Store) registry.KeyHistorySlot {
	t.Helper()
	slot, err := s.ReadKeyHistory(ctx)
	if err != nil {
		t.Fatalf("read key history: %v", err)
	}
	return slot
}

func mustCommitKeys(t *testing.T, s registry.Store, w registry.KeyHistoryWrite) registry.KeyHistoryResult {
	t.Helper()
	res, err := s.CommitKeyHistory(ctx, w)
	if err != nil {
		t.Fatalf("commit key history: %v", err)
	}
	return res
}

// testKeyHistoryCommitThenRead: absent at first; a commit from absent is
// read back byte for byte at its revision; records and the history do
// not move each other's revisions.
func testKeyHistoryCommitThenRead(t *testing.T, s registry.Store) {
	empty := mustReadKeys(t, s)
	if empty.History != nil || empty.Raw != nil || empty.ModRev != 0 || empty.Revision < 1 {
		t.Fatalf("empty store: %+v", empty)
	}
	rec := mustCommit(t, s, registry.Write{Resource: "k/1", Record: &lockstate.Record{HighestFence: 1}})
	h := &registry.KeyHistory{Keys: []registry.GateKeyUse{keyUse("gk-1", "ledger-db", "one", grant.KeyRetired), keyUse("gk-2", "ledger-db", "two", grant.KeyActive)}}
	res := mustCommitKeys(t, s, registry.KeyHistoryWrite{History: h})
	if !res.OK || res.Revision <= rec.Revision {
		t.Fatalf("commit from absent: %+v after revision %d", res, rec.Revision)
	}
	got := mustReadKeys(t, s)
	if got.ModRev != res.Revision || got.Revision < res.Revision || !bytes.Equal(got.Raw, registry.EncodeKeyHistory(h)) ||
		fmt.Sprint(got.History) != fmt.Sprint(h) {
		t.Fatalf("read after commit: %+v, want %+v at %d", got, h, res.Revision)
	}
	if snap := mustRead(t, s, "k/1"); snap.RecordRev != rec.Revision {
		t.Fatalf("the history's commit moved the record's revision to %d", snap.RecordRev)
	}
	rec2 := mustCommit(t, s, registry.Write{Resource: "k/1", RecordRev: rec.Revision, Record: &lockstate.Record{HighestFence: 2}})
	if again := mustReadKeys(t, s); !rec2.OK || again.ModRev != res.Revision || again.Revision < rec2.Revision {
		t.Fatalf("a record's commit moved the history: %+v", again)
	}
}

// testKeyHistoryCompare: a write decided on other bytes, or on an absent
// history when one exists, or on a present one when none does, fails
// with the history now and writes nothing; the write naming the stored
// bytes goes through.
func testKeyHistoryCompare(t *testing.T, s registry.Store) {
	one := &registry.KeyHistory{Keys: []registry.GateKeyUse{keyUse("gk-1", "g", "one", grant.KeyActive)}}
	if got := mustCommitKeys(t, s, registry.KeyHistoryWrite{WasRaw: registry.EncodeKeyHistory(one), History: one}); got.OK || got.Current.History != nil {
		t.Fatalf("a write naming bytes over an absent history: %+v", got)
	}
	first := mustCommitKeys(t, s, registry.KeyHistoryWrite{History: one})
	if !first.OK {
		t.Fatalf("first commit: %+v", first)
	}
	stored := registry.EncodeKeyHistory(one)
	other := &registry.KeyHistory{Keys: []registry.GateKeyUse{keyUse("gk-1", "g", "another", grant.KeyActive)}}
	for name, was := range map[string][]byte{
		"absent":      nil,
		"other bytes": registry.EncodeKeyHistory(other),
		"empty":       registry.EncodeKeyHistory(&registry.KeyHistory{}),
	} {
		got := mustCommitKeys(t, s, registry.KeyHistoryWrite{WasRaw: was, History: other})
		if got.OK || !bytes.Equal(got.Current.Raw, stored) || got.Current.ModRev != first.Revision || got.Current.Revision < first.Revision {
			t.Fatalf("%s: %+v", name, got)
		}
	}
	if got := mustReadKeys(t, s); !bytes.Equal(got.Raw, stored) {
		t.Fatalf("a failed compare wrote: %+v", got.History)
	}
	dropped := &registry.KeyHistory{Keys: []registry.GateKeyUse{keyUse("gk-1", "g", "one", registry.KeyDropped)}}
	next := mustCommitKeys(t, s, registry.KeyHistoryWrite{WasRaw: stored, History: dropped})
	if got := mustReadKeys(t, s); !next.OK || got.ModRev != next.Revision || got.History.Keys[0].State != registry.KeyDropped {
		t.Fatalf("the write naming the stored bytes: %+v, read %+v", next, got)
	}
}

// testKeyHistoryConcurrent: writers each add their own key IDs by
// read-compare-swap; every successful commit must keep every other's,
// as two replicas loading gate keys at once must (a lost update is a
// key ID the registry forgot, free to come back).
func testKeyHistoryConcurrent(t *testing.T, s registry.Store) {
	const workers, each = 4, 6
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < each; {
				slot, err := s.ReadKeyHistory(ctx)
				if err != nil {
					errs <- err
					return
				}
				h := &registry.KeyHistory{}
				if slot.History != nil {
					h.Keys = slices.Clone(slot.History.Keys)
				}
				h.Keys = append(h.Keys, keyUse(fmt.Sprintf("w%d-k%d", w, n), "g", fmt.Sprint(w, n), grant.KeyActive))
				slices.SortFunc(h.Keys, func(a, b registry.GateKeyUse) int { return strings.Compare(a.KeyID, b.KeyID) })
				res, err := s.CommitKeyHistory(ctx, registry.KeyHistoryWrite{WasRaw: slot.Raw, History: h})
				if err != nil {
					errs <- err
					return
				}
				if res.OK {
					n++
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := mustReadKeys(t, s).History; got == nil || len(got.Keys) != workers*each {
		t.Fatalf("history holds %v, want %d keys: a compare-and-swap lost an update", got, workers*each)
	}
}
