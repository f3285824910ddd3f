package storetest

import (
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// Restorable is a store that can be put back to an earlier state with the
// revisions written since handed out again, as etcd is by a snapshot
// restore without --bump-revision. Backup captures the state now; the
// function it returns restores it (any number of times).
type Restorable struct {
	registry.Store
	Backup func() (restore func())
}

// NewRestorable returns an empty Restorable for one subtest.
type NewRestorable func(t *testing.T) Restorable

// RunRestore runs the cases a revision-reusing restore makes necessary:
// the content compares of registry.Write (RecordWas, SettingsWas), which
// are what stop a writer that decided on contents read before the restore
// from committing over the restored contents at a revision that came back.
func RunRestore(t *testing.T, newStore NewRestorable) {
	t.Run("RestoredRevisionWithOtherRecord", func(t *testing.T) { testRestoredRecord(t, newStore(t)) })
	t.Run("RestoredRevisionWithOtherSettings", func(t *testing.T) { testRestoredSettings(t, newStore(t)) })
}

// testRestoredRecord: a writer reads fence 2 at revision b; the store is
// restored to fence 1 and another writer commits fence 3, which the
// restored store puts at revision b again. The first writer's compare at
// revision b naming fence 2 must fail and return fence 3; the same compare
// on the revision alone would succeed (shown last, so the case cannot
// pass on a restore that does not really reuse revisions).
func testRestoredRecord(t *testing.T, s Restorable) {
	first := mustCommit(t, s, registry.Write{Resource: "r/1", Record: &lockstate.Record{HighestFence: 1}})
	restore := s.Backup()
	cached := mustCommit(t, s, registry.Write{Resource: "r/1", RecordRev: first.Revision, Record: &lockstate.Record{HighestFence: 2},
		RecordWas: &lockstate.Record{HighestFence: 1}})
	restore()
	if snap := mustRead(t, s, "r/1"); snap.RecordRev != first.Revision || snap.Record.HighestFence != 1 {
		t.Fatalf("after the restore: fence %d at %d, want fence 1 at %d", snap.Record.HighestFence, snap.RecordRev, first.Revision)
	}
	other := mustCommit(t, s, registry.Write{Resource: "r/1", RecordRev: first.Revision, Record: &lockstate.Record{HighestFence: 3},
		RecordWas: &lockstate.Record{HighestFence: 1}})
	if !other.OK || other.Revision != cached.Revision {
		t.Fatalf("commit after the restore: %+v, want revision %d handed out again", other, cached.Revision)
	}
	stale := registry.Write{Resource: "r/1", RecordRev: cached.Revision, Record: &lockstate.Record{HighestFence: 4},
		RecordWas: &lockstate.Record{HighestFence: 2}}
	got := mustCommit(t, s, stale)
	if got.OK {
		t.Fatal("a write decided on the record read before the restore committed over the restored one")
	}
	if cur := got.Current; cur.RecordRev != cached.Revision || cur.Record == nil || cur.Record.HighestFence != 3 {
		t.Fatalf("failed compare returned %+v, want fence 3 at %d", cur, cached.Revision)
	}
	stale.RecordWas = nil
	if got := mustCommit(t, s, stale); !got.OK {
		t.Fatalf("on the revision alone the stale write should have gone through (the restore did not reuse revisions?): %+v", got.Current)
	}
}

// testRestoredSettings is testRestoredRecord for the settings.
func testRestoredSettings(t *testing.T, s Restorable) {
	first := mustCommit(t, s, registry.Write{Settings: &lockstate.Settings{RevokedBelowEpoch: 1}})
	restore := s.Backup()
	cached := mustCommit(t, s, registry.Write{SettingsRev: first.Revision, Settings: &lockstate.Settings{RevokedBelowEpoch: 2},
		SettingsWas: &lockstate.Settings{RevokedBelowEpoch: 1}})
	restore()
	other := mustCommit(t, s, registry.Write{SettingsRev: first.Revision, Settings: &lockstate.Settings{RevokedBelowEpoch: 3},
		SettingsWas: &lockstate.Settings{RevokedBelowEpoch: 1}})
	if !other.OK || other.Revision != cached.Revision {
		t.Fatalf("commit after the restore: %+v, want revision %d handed out again", other, cached.Revision)
	}
	stale := registry.Write{SettingsRev: cached.Revision, Settings: &lockstate.Settings{RevokedBelowEpoch: 4},
		SettingsWas: &lockstate.Settings{RevokedBelowEpoch: 2}}
	got := mustCommit(t, s, stale)
	if got.OK {
		t.Fatal("a write decided on the settings read before the restore committed over the restored ones")
	}
	if cur := got.Current; cur.SettingsRev != cached.Revision || cur.Settings.RevokedBelowEpoch != 3 {
		t.Fatalf("failed compare returned settings %+v at %d, want epoch 3 at %d", cur.Settings, cur.SettingsRev, cached.Revision)
	}
	stale.SettingsWas = nil
	if got := mustCommit(t, s, stale); !got.OK {
		t.Fatalf("on the revision alone the stale write should have gone through (the restore did not reuse revisions?): %+v", got.Current)
	}
}
