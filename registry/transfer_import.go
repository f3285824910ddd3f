package registry

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// ImportProgressLines is how often (in lines) an import reports progress.
const ImportProgressLines = 1000

// importKeysBatchMax is how many gate key lines one import commit merges
// into the target's key history (each commit rewrites the whole history).
const importKeysBatchMax = 1024

// importBatchMax is how many request entries one import commit writes,
// each compared absent: 32 puts and their compares stay well inside
// etcd's default --max-txn-ops of 128.
const importBatchMax = 32

// importRetriesMax bounds the compare-and-swap retries of one item: only
// a registry writing to the target at the same time makes them fail.
const importRetriesMax = 16

// ImportOptions tunes an import.
type ImportOptions struct {
	// ResumeAfter is how many lines an interrupted import already applied
	// (its report's Line): they are read and checked, not applied again.
	// Optional, defaults to 0: from the start. Any value up to the true
	// one is safe, since applying a line twice changes nothing.
	ResumeAfter int
	// Progress, when set, is called every ImportProgressLines lines and
	// at the end with the report so far.
	Progress func(ImportReport)
	_        struct{}
}

// ImportReport says what an import did.
type ImportReport struct {
	// Line is the last line whose effect is committed: an interrupted
	// import continues with ResumeAfter = Line.
	Line int
	// Complete: the end line was read and its counts matched.
	Complete bool
	// Settings is what became of the settings: "added", "raised" (some
	// field taken from the export), "same" or "kept" (the target's were
	// higher or equal field by field).
	Settings                string
	Keys, Records, Requests ImportCounts
}

// ImportCounts counts an import's items by outcome.
type ImportCounts struct {
	Added  int // the target had none: written as exported
	Same   int // the target had the same (applied before)
	Raised int // records: the target's floor or policy generation raised to the export's; keys: its state moved on to the export's
	Kept   int // the target's own was kept: as high or higher, or (a request entry) another
}

// importer applies an export's lines to one store.
type importer struct {
	store     Store
	setRev    uint64 // the settings' mod revision as last seen
	rep       ImportReport
	pending   []ExportLine // request lines not yet committed, the last one at line pendingTo
	pendingTo int
	keys      []GateKeyUse // key lines not yet merged, the last one at line keysTo
	keysTo    int
	// keyLines, records and requests count the lines of each kind read,
	// applied or not, for the end line's check.
	keyLines, records, requests int
}

// Import applies an export read from r to store, never lowering anything
// the store has (see the comment on the format above). It stops at the
// first line that does not parse, naming it; what came before is applied.
func Import(ctx context.Context, store Store, r io.Reader, opt ImportOptions) (ImportReport, error) {
	im := &importer{store: store}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), ExportLineBytesMax)
	n := 0
	for sc.Scan() {
		n++
		l, err := parseExportLine(sc.Bytes(), n)
		if err == nil {
			err = im.line(ctx, l, n, n <= opt.ResumeAfter)
		}
		if err != nil {
			return im.rep, err
		}
		if opt.Progress != nil && n%ImportProgressLines == 0 {
			opt.Progress(im.rep)
		}
	}
	if err := sc.Err(); err != nil {
		return im.rep, fmt.Errorf("registry: import: after line %d: %w", n, err)
	}
	if err := im.flush(ctx); err != nil {
		return im.rep, err
	}
	if err := im.flushKeys(ctx); err != nil {
		return im.rep, err
	}
	if opt.Progress != nil {
		opt.Progress(im.rep)
	}
	if !im.rep.Complete {
		return im.rep, fmt.Errorf("%w: import: the export ends at line %d without its end line: cut short? (what came before is applied)", wire.ErrInvalid, n)
	}
	return im.rep, nil
}

// line applies line n (or, with skip, only checks its place).
func (im *importer) line(ctx context.Context, l ExportLine, n int, skip bool) error {
	switch {
	case im.rep.Complete:
		return fmt.Errorf("%w: export line %d: data after the end line", wire.ErrInvalid, n)
	case (n == 1) != (l.Kind == LineHeader):
		return fmt.Errorf("%w: export line %d: %s line; an export starts with its header, once", wire.ErrInvalid, n, l.Kind)
	case l.Kind == LineKey:
		im.keyLines++
	case l.Kind == LineRecord:
		im.records++
	case l.Kind == LineRequest:
		im.requests++
	}
	if l.Kind != LineRequest {
		if err := im.flush(ctx); err != nil {
			return err
		}
	}
	if l.Kind != LineKey {
		if err := im.flushKeys(ctx); err != nil {
			return err
		}
	}
	if skip || l.Kind == LineHeader {
		im.rep.Line = max(im.rep.Line, n)
		return nil
	}
	var err error
	switch l.Kind {
	case LineSettings:
		err = im.settings(ctx, *l.Settings)
	case LineRecord:
		err = im.record(ctx, l.Resource, l.Record)
	case LineKey:
		im.keys, im.keysTo = append(im.keys, *l.Key), n
		if len(im.keys) >= importKeysBatchMax {
			return im.flushKeys(ctx)
		}
		return nil
	case LineRequest:
		im.pending, im.pendingTo = append(im.pending, l), n
		if len(im.pending) >= importBatchMax {
			return im.flush(ctx)
		}
		return nil
	case LineEnd:
		if l.Keys != im.keyLines || l.Records != im.records || l.Requests != im.requests {
			return fmt.Errorf("%w: export line %d: the end line counts %d keys, %d records and %d request entries, the export has %d, %d and %d: not one export",
				wire.ErrInvalid, n, l.Keys, l.Records, l.Requests, im.keyLines, im.records, im.requests)
		}
		im.rep.Complete = true
	}
	if err == nil {
		im.rep.Line = n
	}
	return err
}

// readSettings reads the target's settings and remembers their revision.
func (im *importer) readSettings(ctx context.Context) (Snapshot, error) {
	s, err := im.store.Read(ctx, "", nil)
	if err != nil {
		return s, storeError("read", err)
	}
	im.setRev = s.SettingsRev
	return s, nil
}

// settings raises the target's settings to the export's, field by field.
func (im *importer) settings(ctx context.Context, imp lockstate.Settings) error {
	s, err := im.readSettings(ctx)
	for try := 0; err == nil; try++ {
		merged, outcome := mergeSettings(s.Settings, s.SettingsRev != 0, imp)
		if outcome == "same" || outcome == "kept" {
			im.rep.Settings = outcome
			return nil
		}
		w := Write{SettingsRev: s.SettingsRev, Settings: &merged}
		bindDecidedOn(&w, &s)
		res, cerr := im.store.Commit(ctx, w)
		switch {
		case cerr != nil:
			return storeError("commit", cerr)
		case res.OK:
			im.setRev, im.rep.Settings = res.Revision, outcome
			return nil
		case try >= importRetriesMax:
			return fmt.Errorf("%w: import: settings: %d compare-and-swap retries", wire.ErrConflict, try)
		}
		s, im.setRev = res.Current, res.Current.SettingsRev
	}
	return err
}

// mergeSettings is the higher of cur and imp, field by field, and what
// that did: added (the target had none), raised, same or kept.
func mergeSettings(cur lockstate.Settings, exists bool, imp lockstate.Settings) (lockstate.Settings, string) {
	out := cur
	out.RevokedBelowEpoch = max(cur.RevokedBelowEpoch, imp.RevokedBelowEpoch)
	if imp.FenceGeneration > cur.FenceGeneration {
		out.FenceGeneration, out.FenceBumpedAtMs = imp.FenceGeneration, imp.FenceBumpedAtMs
	}
	switch {
	case out != cur && !exists:
		return out, "added"
	case out != cur:
		return out, "raised"
	case cur == imp:
		return out, "same"
	}
	return out, "kept"
}

// record puts resource's record as exported where the target has none,
// and otherwise keeps the target's, raised (mergeRecord).
func (im *importer) record(ctx context.Context, resource string, imp *lockstate.Record) error {
	w := Write{Resource: resource, Record: imp, SettingsRev: im.setRev}
	for try := 0; ; try++ {
		res, err := im.store.Commit(ctx, w)
		if err != nil {
			return storeError("commit", err)
		}
		if res.OK {
			if w.RecordRev == 0 {
				im.rep.Records.Added++
			} else {
				im.rep.Records.Raised++
			}
			return nil
		}
		if try >= importRetriesMax {
			return fmt.Errorf("%w: import: %s: %d compare-and-swap retries", wire.ErrConflict, resource, try)
		}
		cur := res.Current
		im.setRev = cur.SettingsRev
		w = Write{Resource: resource, Record: imp, SettingsRev: cur.SettingsRev}
		if cur.Record == nil {
			continue // only the settings moved
		}
		if bytes.Equal(EncodeRecord(cur.Record), EncodeRecord(imp)) {
			im.rep.Records.Same++
			return nil
		}
		merged := mergeRecord(cur.Record, imp)
		if merged == nil {
			im.rep.Records.Kept++
			return nil
		}
		w = Write{Resource: resource, RecordRev: cur.RecordRev, Record: merged, RecordWas: cur.Record, RecordWasRaw: cur.RecordRaw, SettingsRev: cur.SettingsRev}
	}
}

// mergeRecord is the target's record cur with its floor raised to every
// fence imp knows (when cur's next fence is not already above them) and
// its policy generation to imp's; nil when cur is already as high. The
// target's holder and waiters stay its own.
func mergeRecord(cur, imp *lockstate.Record) *lockstate.Record {
	known := max(imp.HighestFence, imp.Floor)
	raise := known > max(cur.Floor, cur.HighestFence)
	if !raise && imp.PolicyGeneration <= cur.PolicyGeneration {
		return nil
	}
	next := cur.Clone()
	if raise {
		next.Floor = known
	}
	next.PolicyGeneration = max(cur.PolicyGeneration, imp.PolicyGeneration)
	return next
}

// flush commits the pending request entries, each compared absent, in
// one write; if any is present, one by one.
func (im *importer) flush(ctx context.Context) error {
	if len(im.pending) == 0 {
		return nil
	}
	batch := im.pending
	im.pending = nil
	w := Write{SettingsRev: im.setRev}
	for _, l := range batch {
		key := lockstate.RequestKey{Owner: l.Owner, RequestID: l.RequestID}
		w.Requests = append(w.Requests, RequestWrite{Key: key, Compare: true, Entry: l.Entry})
		w.Sweeps = append(w.Sweeps, importedSweep(key, l.Entry))
	}
	res, err := im.store.Commit(ctx, w)
	if err != nil {
		return storeError("commit", err)
	}
	if res.OK {
		im.rep.Requests.Added += len(batch)
	} else {
		im.setRev = res.Current.SettingsRev
		for _, l := range batch {
			if err := im.request(ctx, l); err != nil {
				return err
			}
		}
	}
	im.rep.Line = im.pendingTo
	return nil
}

// flushKeys merges the pending gate key lines into the target's key
// history by compare-and-swap (KeyHistory.merge: never lowering a state);
// an ID the target holds with another secret or gate stops the import.
func (im *importer) flushKeys(ctx context.Context) error {
	if len(im.keys) == 0 {
		return nil
	}
	batch := im.keys
	im.keys = nil
	slot, err := im.store.ReadKeyHistory(ctx)
	for try := 0; err == nil; try++ {
		next, counts, merr := slot.History.merge(batch)
		if merr != nil {
			return fmt.Errorf("registry: import: gate keys up to line %d: %w", im.keysTo, merr)
		}
		if counts.Added+counts.Raised == 0 {
			im.rep.Keys.Same += counts.Same
			im.rep.Keys.Kept += counts.Kept
			im.rep.Line = im.keysTo
			return nil
		}
		res, cerr := im.store.CommitKeyHistory(ctx, KeyHistoryWrite{WasRaw: slot.Raw, History: next})
		switch {
		case cerr != nil:
			return storeError("commit key history", cerr)
		case res.OK:
			im.rep.Keys.Added += counts.Added
			im.rep.Keys.Same += counts.Same
			im.rep.Keys.Raised += counts.Raised
			im.rep.Keys.Kept += counts.Kept
			im.rep.Line = im.keysTo
			return nil
		case try >= importRetriesMax:
			return fmt.Errorf("%w: import: gate key history: %d compare-and-swap retries", wire.ErrConflict, try)
		}
		slot = res.Current
	}
	return storeError("read key history", err)
}

// importedSweep is an imported entry's sweep index item: at its grant's
// first expiry, without the retention, which the importer does not know
// (the target's registries judge it with theirs at that first look, and
// move it on).
func importedSweep(key lockstate.RequestKey, e *lockstate.RequestEntry) SweepWrite {
	return SweepWrite{Item: SweepItem{AtMs: lockstate.FirstSweepMs(e.Grant, lockstate.Limits{}), Key: key, Resource: wire.RecordName(e.Grant.Resource)}}
}

// request puts one request entry where the target has none; an entry the
// target has is kept.
func (im *importer) request(ctx context.Context, l ExportLine) error {
	key := lockstate.RequestKey{Owner: l.Owner, RequestID: l.RequestID}
	for try := 0; ; try++ {
		res, err := im.store.Commit(ctx, Write{SettingsRev: im.setRev,
			Requests: []RequestWrite{{Key: key, Compare: true, Entry: l.Entry}}, ReadKeys: []lockstate.RequestKey{key},
			Sweeps: []SweepWrite{importedSweep(key, l.Entry)}})
		if err != nil {
			return storeError("commit", err)
		}
		if res.OK {
			im.rep.Requests.Added++
			return nil
		}
		if try >= importRetriesMax {
			return fmt.Errorf("%w: import: request %s/%s: %d compare-and-swap retries", wire.ErrConflict, l.Owner, l.RequestID, try)
		}
		im.setRev = res.Current.SettingsRev
		if have := res.Current.slot(key).Entry; have != nil {
			if bytes.Equal(EncodeRequestEntry(have), EncodeRequestEntry(l.Entry)) {
				im.rep.Requests.Same++
			} else {
				im.rep.Requests.Kept++
			}
			return nil
		}
	}
}
