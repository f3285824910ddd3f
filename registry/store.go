package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/registry/lockstate"
)

// ErrStoreWentBack: the store saw that its state is older than state it
// served before (to this process): it lost writes it had acknowledged (a
// coordination service that elected a leader without them), or it was
// restored from a copy. The call that saw it fails, wrapping this error
// (the registry answers wire.ErrUnavailable); later calls serve the state
// the store holds now. Fences the registry issued since are not in that
// state, so it may issue them again: the gates' regression rule pauses
// the resources that see one, and bumping the fence range (fencegate
// fence-range bump) moves every next fence above them. A store that can
// tell (zkstore) says so; the contract does not require it.
var ErrStoreWentBack = errors.New("registry: the store went back")

// ErrMemberSet: a lock-set write or read that names its records wrongly
// (a member twice, an empty name, a Resource beside Members). Nothing was
// sent.
var ErrMemberSet = errors.New("registry: malformed lock-set write")

// ErrTooLarge: the write cannot fit in one transaction of the store's
// engine (etcd's --max-txn-ops, ZooKeeper's jute.maxbuffer). Nothing was
// sent; the same write will never fit.
var ErrTooLarge = errors.New("registry: the write does not fit in one store transaction")

// Store is the registry's only state: linearizable compare-and-swap over
// per-resource records, the request-ID index and the registry-wide
// settings, under one monotonically increasing revision.
//
// Contract, shared by every implementation and checked by storetest:
//   - Every stored item has a mod revision (0 when absent) and a create
//     revision, both revisions of the transaction that wrote them. A put
//     over an existing item keeps its create revision; a delete followed by
//     a put starts a new one.
//   - Read returns the record, the settings and the listed request entries
//     as of one revision, which is at least every revision committed before
//     Read was called (a linearizable read).
//   - Commit applies all of a Write or none of it: it succeeds only if each
//     compared request entry's mod revision equals the Write's and, for
//     the record and the settings, their stored contents equal the ones
//     the Write names it was decided on (RecordWas, SettingsWas) or, where
//     it names none, their mod revisions equal the Write's (0: absent).
//     Contents decide where given: the core's decisions are functions of
//     what they read, so a write decided on contents the store still holds
//     is right whatever happened in between, and contents, unlike
//     revisions, are not handed out again by a restore. On a failed compare it returns, read in
//     the same linearizable step, the current snapshot of the Write's
//     resource, settings and ReadKeys, so the caller retries without
//     another round trip.
//   - Revisions only grow; a successful Commit returns its own revision,
//     which becomes the mod revision of everything it wrote.
//   - An error other than a failed compare leaves the outcome unknown.
//     A store out of space says so with an error wrapping
//     wire.ErrStoreFull (etcd applies the write that crosses its quota
//     and still answers NOSPACE, so the outcome is unknown there too),
//     and may refuse that way, unsent, a write that creates request
//     entries (a grant) while its engine nears its limit; it never
//     refuses so one that only replaces or deletes.
//   - The sweep index (SweepItem) says when each request entry is next
//     due a look from the retention sweep. Its items are written only by
//     Commits, beside anything else the Write does (Write.Sweeps), and
//     carry no revision nor compare of their own: putting an item that
//     exists, or deleting one that does not, changes nothing and fails no
//     commit. ScanSweep lists them in (AtMs, Owner, RequestID) order as
//     of one linearizable read. A page costs at most about the items
//     between after and beforeMs (an etcd range counts them), never the
//     whole index: the sweep asks in windows of due time, so its cost
//     follows what is due, not what is kept.
//   - The gate key history (KeyHistory) is one more item under the same
//     revisions, read and written on its own: ReadKeyHistory is a
//     linearizable read of it; CommitKeyHistory writes it, as a commit of
//     its own revision, only if its stored bytes equal the ones the write
//     names (absent when none), and on a failed compare returns, read in
//     the same linearizable step, the current history. Records, request
//     entries and settings never change it, nor it them.
//   - Lock sets (several records in one decision). ReadSet returns the
//     records of every named resource (Snapshot.Members, in the order
//     named), the settings and the listed request entries as of one
//     revision, linearizable as Read is. A set write (Write.Members, with
//     Write.Resource "") compares every member record as the record of a
//     plain write is compared (contents where RecordWas is named, else the
//     mod revision, 0: absent) and writes those whose Record is set; it is
//     one Commit like any other: every compare (each member's, the
//     settings', each entry's) holds and everything it names is written at
//     one revision, or nothing is, and then Current holds every member (in
//     the write's order), the settings and ReadKeys, read in the same
//     linearizable step. A Write names records either in Resource or in
//     Members, never both; members are distinct non-empty names. A store
//     refuses, unsent, with an error wrapping ErrMemberSet, a write or
//     ReadSet that breaks this, and with one wrapping ErrTooLarge a write
//     that cannot fit in one transaction of its engine (etcd's
//     --max-txn-ops, ZooKeeper's jute.maxbuffer): it never splits one.
//
// The safety rules live in the core (package lockstate), never in a store.
type Store interface {
	// Read returns a linearizable snapshot of resource ("" for none) and of
	// the request entries keys, in order.
	Read(ctx context.Context, resource string, keys []lockstate.RequestKey) (Snapshot, error)
	// ReadSet returns a linearizable snapshot of every resource of
	// resources (distinct, Snapshot.Members in the same order; Resource is
	// "") and of the request entries keys, in order, all as of one
	// revision.
	ReadSet(ctx context.Context, resources []string, keys []lockstate.RequestKey) (Snapshot, error)
	// Commit compares and, if all compares hold, writes.
	Commit(ctx context.Context, w Write) (CommitResult, error)
	// Watch reports the resource's record each time it changes at or after
	// revision fromRev. Events may be coalesced (a slow reader sees only the
	// latest), never reordered. The channel closes when ctx ends or the
	// watch fails; the caller then falls back to Read.
	Watch(ctx context.Context, resource string, fromRev uint64) (<-chan RecordEvent, error)
	// ScanRequests lists up to limit request entries with keys after after
	// (in key order, Owner then RequestID), for retention sweeps.
	ScanRequests(ctx context.Context, after lockstate.RequestKey, limit int) ([]RequestSlot, error)
	// ScanRecords lists up to limit resource records whose names begin
	// with prefix and sort after after (byte order), in name order, all as
	// of one linearizable read, for listing locks. Resources without a
	// record are not listed.
	ScanRecords(ctx context.Context, prefix, after string, limit int) ([]RecordSlot, error)
	// ScanSweep lists up to limit items of the sweep index that sort after
	// after (in (AtMs, Owner, RequestID) order; the zero item: from the
	// start) and are due before beforeMs (AtMs < beforeMs), all as of one
	// linearizable read.
	ScanSweep(ctx context.Context, after SweepItem, beforeMs int64, limit int) ([]SweepItem, error)
	// ReadKeyHistory returns the gate key history as of one linearizable
	// read.
	ReadKeyHistory(ctx context.Context) (KeyHistorySlot, error)
	// CommitKeyHistory compares the stored history's bytes with w.WasRaw
	// and, if they are equal, writes w.History.
	CommitKeyHistory(ctx context.Context, w KeyHistoryWrite) (KeyHistoryResult, error)
}

// KeyHistorySlot is the gate key history as read.
type KeyHistorySlot struct {
	Revision uint64      // store revision of the read, >= 1
	History  *KeyHistory // nil when none was ever written
	// Raw is the history's stored bytes (nil when absent): a write decided
	// on this slot names them (KeyHistoryWrite.WasRaw).
	Raw    []byte
	ModRev uint64 // the history's mod revision, 0 when absent
}

// KeyHistoryWrite replaces the gate key history by compare-and-swap on
// its contents.
type KeyHistoryWrite struct {
	// WasRaw is the stored bytes the write was decided on
	// (KeyHistorySlot.Raw); nil: the history must be absent.
	WasRaw  []byte
	History *KeyHistory // the new history; required
}

// KeyHistoryResult is a CommitKeyHistory's outcome.
type KeyHistoryResult struct {
	OK       bool
	Revision uint64         // the commit's revision when OK
	Current  KeyHistorySlot // when !OK: the history now
}

// RecordSlot is one resource record as listed.
type RecordSlot struct {
	Resource string
	Record   *lockstate.Record
	ModRev   uint64
}

// RequestSlot is one request entry as read.
type RequestSlot struct {
	Key       lockstate.RequestKey
	Entry     *lockstate.RequestEntry // nil when absent
	ModRev    uint64                  // 0 when absent
	CreateRev uint64                  // revision that created it: the grant's BackendRevision
}

// Snapshot is state read at one revision.
type Snapshot struct {
	Revision  uint64 // store revision of the read, >= 1
	Resource  string
	Record    *lockstate.Record // nil when the resource has no record yet
	RecordRev uint64            // mod revision, 0 when absent
	// RecordRaw is the record's stored bytes as read (nil when absent, or
	// when the snapshot came from a cache that kept none). Read only: a
	// write decided on the snapshot names them (Write.RecordWasRaw).
	RecordRaw   []byte
	Settings    lockstate.Settings
	SettingsRev uint64
	Requests    []RequestSlot // one per requested key, in order
	// Members are the records of a lock set (ReadSet, or a failed set
	// write's Current), in the order named; nil otherwise.
	Members []MemberSlot
}

// MemberSlot is one member record of a lock set as read.
type MemberSlot struct {
	Resource  string
	Record    *lockstate.Record // nil when absent
	RecordRev uint64            // mod revision, 0 when absent
	RecordRaw []byte            // stored bytes (nil when absent)
}

// MemberWrite compares one member record of a set write and, when Record
// is set, writes it.
type MemberWrite struct {
	Resource     string
	RecordRev    uint64            // compare: mod revision (0: absent), unless RecordWas is set
	RecordWas    *lockstate.Record // compare contents, as Write.RecordWas
	RecordWasRaw []byte            // as Write.RecordWasRaw
	Record       *lockstate.Record // the new record; nil: compare only
}

// Write is one atomic compare-and-swap.
type Write struct {
	Resource    string            // "" when the write neither compares nor writes a record
	RecordRev   uint64            // compare: the record's mod revision (0: absent), unless RecordWas is set
	Record      *lockstate.Record // the new record; nil leaves it as it is
	SettingsRev uint64            // compare: the settings' mod revision, unless SettingsWas is set
	Settings    *lockstate.Settings
	// RecordWas and SettingsWas, when set, are the record and settings the
	// write was decided on; the store compares their contents instead of
	// the revisions (a set one requires the item to exist). A restored
	// etcd (a snapshot restore without --bump-revision) hands out
	// revisions again, so a revision alone can match a different record: a
	// replica deciding on a record it cached before the restore would
	// otherwise commit over the restored one. The contents are also the
	// cheaper compare to keep alone: etcd reads the key once per compare.
	RecordWas   *lockstate.Record
	SettingsWas *lockstate.Settings
	// RecordWasRaw, when set with RecordWas, is the stored bytes RecordWas
	// was decoded from (Snapshot.RecordRaw): the store compares them, not
	// an encoding of RecordWas, so a record stored in another form than
	// the store writes (an upgrade, StoredForm) compares equal to itself.
	// Without it the store compares RecordWas in either form where it can
	// (StoredRecordIs), or in the form it writes.
	RecordWasRaw []byte
	Requests     []RequestWrite
	// Sweeps are the sweep index items the write puts or deletes, at most
	// once each; they are not compared.
	Sweeps []SweepWrite
	// ReadKeys are the request entries to return in CommitResult.Current
	// when a compare fails, in order; written keys are not added.
	ReadKeys []lockstate.RequestKey
	// Members make this a set write: each member record is compared and,
	// where its Record is set, written, all in this one commit (Store,
	// "Lock sets"). Resource must then be "" (and RecordRev, Record,
	// RecordWas and RecordWasRaw unset).
	Members []MemberWrite
}

// CheckMembers is the shape every store requires of a write's members
// (Store, "Lock sets"): nil for a write without them, else an error
// wrapping ErrMemberSet when a member is named twice or with an empty
// name, or the write also names a Resource or a record of its own.
func CheckMembers(w Write) error {
	if len(w.Members) == 0 {
		return nil
	}
	if w.Resource != "" || w.Record != nil || w.RecordWas != nil || w.RecordWasRaw != nil || w.RecordRev != 0 {
		return fmt.Errorf("%w: a write names records either in Resource (%q) or in Members, not both", ErrMemberSet, w.Resource)
	}
	names := make([]string, len(w.Members))
	for i, m := range w.Members {
		if m.RecordWas == nil && m.RecordWasRaw != nil {
			return fmt.Errorf("%w: member %q names stored bytes without the record they encode", ErrMemberSet, m.Resource)
		}
		names[i] = m.Resource
	}
	return CheckSetNames(names)
}

// CheckSetNames is the shape a ReadSet's resources (and a set write's
// members) must have: non-empty and distinct. The error wraps
// ErrMemberSet.
func CheckSetNames(resources []string) error {
	seen := make(map[string]bool, len(resources))
	for _, r := range resources {
		switch {
		case r == "":
			return fmt.Errorf("%w: a member with an empty name", ErrMemberSet)
		case seen[r]:
			return fmt.Errorf("%w: member %q named twice", ErrMemberSet, r)
		}
		seen[r] = true
	}
	return nil
}

// SweepItem is one item of the sweep index: the request entry Key, of a
// grant on Resource, is due a look from the retention sweep at AtMs
// (registry clock, Unix ms, >= 0). The resource is carried so that one
// Read of it and the entry judges the entry (lockstate.JudgeSweep).
type SweepItem struct {
	AtMs     int64
	Key      lockstate.RequestKey
	Resource string
}

// Less orders items by AtMs, then Key; Resource does not take part (an
// item is named by its instant and key).
func (i SweepItem) Less(o SweepItem) bool {
	if i.AtMs != o.AtMs {
		return i.AtMs < o.AtMs
	}
	return i.Key.Less(o.Key)
}

// SweepWrite puts (or, with Delete, deletes) one item of the sweep index.
type SweepWrite struct {
	Item   SweepItem
	Delete bool
}

// RequestWrite puts (or, with a nil Entry, deletes) one request entry.
type RequestWrite struct {
	Key     lockstate.RequestKey
	Compare bool   // when set, the entry's mod revision must equal ModRev
	ModRev  uint64 // 0: must be absent
	Entry   *lockstate.RequestEntry
}

// CommitResult is a Commit's outcome.
type CommitResult struct {
	OK       bool
	Revision uint64   // the commit's revision when OK
	Current  Snapshot // when !OK: fresh state of the resource, settings and ReadKeys
}

// RecordEvent is a record as a watch saw it.
type RecordEvent struct {
	Record   *lockstate.Record
	ModRev   uint64
	Revision uint64
}

// slot returns the snapshot's entry for key (absent when not read).
func (s *Snapshot) slot(key lockstate.RequestKey) RequestSlot {
	for _, sl := range s.Requests {
		if sl.Key == key {
			return sl
		}
	}
	return RequestSlot{Key: key}
}

// recordOf returns the snapshot's record, or an empty one.
func recordOf(s *Snapshot) *lockstate.Record {
	if s.Record == nil {
		return &lockstate.Record{}
	}
	return s.Record
}

// takenKeys lists the request keys whose entries the snapshot shows to
// exist, for a decision that must not hand a lease to a request that has
// an answer (a key not read counts as absent; the write's compare of its
// absence catches a wrong guess).
func takenKeys(s *Snapshot) []lockstate.RequestKey {
	var out []lockstate.RequestKey
	for _, sl := range s.Requests {
		if sl.Entry != nil {
			out = append(out, sl.Key)
		}
	}
	return out
}
