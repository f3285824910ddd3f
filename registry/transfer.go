package registry

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// Export and import: a store's whole state as JSON lines, to move a
// registry between stores (embedded etcd → a cluster, one cluster to
// another, etcd ↔ ZooKeeper) or back. The first line is the header, then
// the settings, the gate key history's entries in key ID order, every
// record in name order, every request entry in key order, and an end line
// with the counts, so an export cut short is told from a whole one:
//
//	{"kind":"header","schema":"fencegateExport.v1","revision":1042}
//	{"kind":"settings","settings":{"revokedBelowEpoch":0,"fenceGeneration":1784455200}}
//	{"kind":"key","key":{"keyId":"gk-1","gate":"ledger-db","digest":"sha256:…","state":"dropped"}}
//	{"kind":"record","resource":"invoice-batch/2026-07-19","record":{"highestFence":…}}
//	{"kind":"request","owner":"worker-7","requestId":"r-…","entry":{"grant":{…},…}}
//	{"kind":"end","keys":1,"records":1,"requests":1}
//
// The values are the stored types as JSON (FormJSON's), whatever form
// either store keeps, so an export moves between stores of any form. An
// export is read in pages, each a linearizable read, not as one snapshot:
// export a store no registry is writing to (serve stopped), or let the
// bump that follows every switch cover what moved meanwhile.
//
// An import never lowers anything: an item the target lacks is created
// (compared absent), an equal one is left alone, and where the target has
// its own record the higher floor and policy generation are kept (the
// target's floor is raised to the imported highest fence), settings take
// the higher value field by field, a gate key takes the later state (a
// key ID the target holds with another secret or gate stops the import:
// a key ID is used once, forever), and a request entry the target has is
// kept. So an import can be run again, or continued after an interruption
// from any line at or before the last one it applied (ImportOptions.
// ResumeAfter), with the same result. After any switch, copied or not,
// bump the fence range: that, not the copy, is what puts every later
// fence above every fence the old store issued.

// ExportSchema names the format in the header line.
const ExportSchema = "fencegateExport.v1"

// ExportLineBytesMax bounds one line of an export, 1 MiB: a record holds
// at most WaitersPerResourceMax waiters of a few hundred bytes each.
const ExportLineBytesMax = 1 << 20

// exportPageMax is how many records or request entries one scan reads.
const exportPageMax = 256

// ExportLine is one line of an export; Kind says which fields it has.
type ExportLine struct {
	Kind      string                  `json:"kind"`               // header, settings, key, record, request, end
	Schema    string                  `json:"schema,omitempty"`   // header: ExportSchema
	Revision  uint64                  `json:"revision,omitempty"` // header: the store's revision when the export began
	Settings  *lockstate.Settings     `json:"settings,omitempty"` // settings
	Key       *GateKeyUse             `json:"key,omitempty"`      // key: one entry of the gate key history
	Keys      int                     `json:"keys,omitempty"`     // end: how many key lines came before
	Resource  string                  `json:"resource,omitempty"` // record
	Record    *lockstate.Record       `json:"record,omitempty"`   // record
	Owner     string                  `json:"owner,omitempty"`    // request
	RequestID string                  `json:"requestId,omitempty"`
	Entry     *lockstate.RequestEntry `json:"entry,omitempty"`    // request
	Records   int                     `json:"records,omitempty"`  // end: how many record lines came before
	Requests  int                     `json:"requests,omitempty"` // end: how many request lines came before
}

// Line kinds.
const (
	LineHeader   = "header"
	LineSettings = "settings"
	LineKey      = "key"
	LineRecord   = "record"
	LineRequest  = "request"
	LineEnd      = "end"
)

// ExportCounts is what an export wrote.
type ExportCounts struct {
	Keys, Records, Requests int
	Revision                uint64 // the store's revision when it began
}

// Export writes store's settings, gate key history, records and request
// entries to w as JSON lines, page by page (memory stays bounded by a
// page, and the key history, bounded by KeyHistoryBytesMax).
func Export(ctx context.Context, store Store, w io.Writer) (ExportCounts, error) {
	bw := bufio.NewWriter(w)
	put := func(l ExportLine) error {
		b, err := json.Marshal(l)
		if err != nil {
			return fmt.Errorf("registry: export: %w", err)
		}
		_, err = bw.Write(append(b, '\n'))
		return err
	}
	s, err := store.Read(ctx, "", nil)
	if err != nil {
		return ExportCounts{}, storeError("read", err)
	}
	n := ExportCounts{Revision: s.Revision}
	if err := put(ExportLine{Kind: LineHeader, Schema: ExportSchema, Revision: s.Revision}); err != nil {
		return n, err
	}
	if err := put(ExportLine{Kind: LineSettings, Settings: &s.Settings}); err != nil {
		return n, err
	}
	if n.Keys, err = exportKeys(ctx, store, put); err != nil {
		return n, err
	}
	if n.Records, err = exportRecords(ctx, store, put); err != nil {
		return n, err
	}
	if n.Requests, err = exportRequests(ctx, store, put); err != nil {
		return n, err
	}
	if err := put(ExportLine{Kind: LineEnd, Keys: n.Keys, Records: n.Records, Requests: n.Requests}); err != nil {
		return n, err
	}
	return n, bw.Flush()
}

func exportKeys(ctx context.Context, store Store, put func(ExportLine) error) (int, error) {
	slot, err := store.ReadKeyHistory(ctx)
	switch {
	case err != nil:
		return 0, storeError("read key history", err)
	case slot.History == nil:
		return 0, nil
	}
	for i := range slot.History.Keys {
		if err := put(ExportLine{Kind: LineKey, Key: &slot.History.Keys[i]}); err != nil {
			return i, err
		}
	}
	return len(slot.History.Keys), nil
}

func exportRecords(ctx context.Context, store Store, put func(ExportLine) error) (int, error) {
	count, after := 0, ""
	for {
		page, err := store.ScanRecords(ctx, "", after, exportPageMax)
		if err != nil {
			return count, storeError("scan records", err)
		}
		for _, sl := range page {
			if err := put(ExportLine{Kind: LineRecord, Resource: sl.Resource, Record: sl.Record}); err != nil {
				return count, err
			}
			count++
			after = sl.Resource
		}
		if len(page) < exportPageMax {
			return count, nil
		}
	}
}

func exportRequests(ctx context.Context, store Store, put func(ExportLine) error) (int, error) {
	count, after := 0, lockstate.RequestKey{}
	for {
		page, err := store.ScanRequests(ctx, after, exportPageMax)
		if err != nil {
			return count, storeError("scan requests", err)
		}
		for _, sl := range page {
			after = sl.Key
			if sl.Entry == nil {
				continue
			}
			if err := put(ExportLine{Kind: LineRequest, Owner: sl.Key.Owner, RequestID: sl.Key.RequestID, Entry: sl.Entry}); err != nil {
				return count, err
			}
			count++
		}
		if len(page) < exportPageMax {
			return count, nil
		}
	}
}

// parseExportLine strictly decodes line number n of an export and checks
// what its kind requires; a record must pass the stores' own checks.
func parseExportLine(b []byte, n int) (ExportLine, error) {
	var l ExportLine
	if err := strictDecode(b, &l); err != nil {
		return l, fmt.Errorf("%w: export line %d: %v", wire.ErrInvalid, n, err)
	}
	var err error
	switch l.Kind {
	case LineHeader:
		if l.Schema != ExportSchema {
			err = fmt.Errorf("schema %q, want %s", l.Schema, ExportSchema)
		}
	case LineSettings:
		if l.Settings == nil {
			err = fmt.Errorf("settings line without settings")
		}
	case LineRecord:
		err = grant.ValidateResource(l.Resource)
		if err == nil && l.Record == nil {
			err = fmt.Errorf("record line without a record")
		}
		if err == nil {
			err = checkRecord(l.Record)
		}
	case LineKey:
		if l.Key == nil {
			err = fmt.Errorf("key line without a key")
		} else {
			err = l.Key.check()
		}
	case LineRequest:
		err = checkExportedEntry(l)
	case LineEnd:
	default:
		err = fmt.Errorf("unknown kind %q", l.Kind)
	}
	if err != nil {
		return l, fmt.Errorf("%w: export line %d: %v", wire.ErrInvalid, n, err)
	}
	return l, nil
}

func checkExportedEntry(l ExportLine) error {
	if err := grant.ValidateOwner(l.Owner); err != nil {
		return err
	}
	if err := grant.ValidateToken(l.RequestID); err != nil {
		return err
	}
	if l.Entry == nil {
		return fmt.Errorf("request line without an entry")
	}
	if l.Entry.Grant.Owner != l.Owner || l.Entry.Grant.RequestID != l.RequestID {
		return fmt.Errorf("entry of %s/%s filed under %s/%s", l.Entry.Grant.Owner, l.Entry.Grant.RequestID, l.Owner, l.RequestID)
	}
	_, err := grant.ParseState(string(l.Entry.State))
	return err
}
