package registry

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/strictjson"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// Stores keep records and request entries in a stored form (StoredForm:
// the compact binary form by default, or JSON) and settings as JSON.
// Decoding reads either form, told apart by the first byte, and is strict
// (unknown fields, trailing data and broken invariants are ErrCorrupt),
// because a store that can be edited by hand must never make the registry
// issue from state it misread.

// StoredForm is how a store writes records and request entries. Reading
// takes every form, whatever a store writes; the form matters only to the
// readers of what it writes: a registry of a version before the compact
// form reads JSON alone.
type StoredForm uint8

const (
	// FormCompact is the binary form, version 1 (compact.go): about a
	// third of the JSON's bytes, and cheaper to encode and decode. The
	// default.
	FormCompact StoredForm = iota
	// FormJSON is the JSON every earlier version wrote: for an upgrade
	// whose replicas of the earlier version must still read what the
	// upgraded ones write (docs/operations.md, "Upgrading the stored
	// form").
	FormJSON
)

// ParseStoredForm reads a form's name: "compact" or "json".
func ParseStoredForm(s string) (StoredForm, error) {
	switch s {
	case "compact":
		return FormCompact, nil
	case "json":
		return FormJSON, nil
	}
	return 0, fmt.Errorf("%w: stored form %q: want compact or json", wire.ErrInvalid, s)
}

// String is the form's name, as ParseStoredForm reads it.
func (f StoredForm) String() string {
	if f == FormJSON {
		return "json"
	}
	return "compact"
}

// EncodeRecord returns rec's stored form in form f.
func (f StoredForm) EncodeRecord(rec *lockstate.Record) []byte {
	if f == FormJSON {
		return mustJSON(rec)
	}
	return encodeRecordCompact(rec)
}

// EncodeRequestEntry returns e's stored form in form f.
func (f StoredForm) EncodeRequestEntry(e *lockstate.RequestEntry) []byte {
	if f == FormJSON {
		return mustJSON(e)
	}
	return encodeEntryCompact(e)
}

// EncodeRecord returns rec's stored form in the default form.
func EncodeRecord(rec *lockstate.Record) []byte { return FormCompact.EncodeRecord(rec) }

// DecodeRecord strictly decodes a stored record, in either form, and
// checks its invariants.
func DecodeRecord(b []byte) (*lockstate.Record, error) {
	var rec *lockstate.Record
	var err error
	switch {
	case len(b) > 0 && (b[0] == markRecordV1 || b[0] == markRecordSetsV1 || b[0] == markRecordRWV1):
		rec, err = decodeRecordCompact(b)
	case len(b) > 0 && b[0] == markEntryV1:
		err = fmt.Errorf("a request entry's bytes")
	default:
		rec = new(lockstate.Record)
		err = strictDecode(b, rec)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: record: %v", wire.ErrCorrupt, err)
	}
	if err := checkRecord(rec); err != nil {
		return nil, fmt.Errorf("%w: record: %v", wire.ErrCorrupt, err)
	}
	return rec, nil
}

// StoredRecordIs reports whether stored, the bytes a store holds for a
// record, are the record was (Write.RecordWas): byte for byte wasRaw, the
// bytes was was read from, when given; else was's encoding in either
// form, so a record another replica wrote in the other form still
// compares equal during an upgrade. Stores that compare contents on their
// side use it (memstore, zkstore); etcd, which compares on its server,
// sends wasRaw or was in the form the store writes.
func StoredRecordIs(stored []byte, was *lockstate.Record, wasRaw []byte) bool {
	if wasRaw != nil {
		return bytes.Equal(stored, wasRaw)
	}
	return bytes.Equal(stored, FormCompact.EncodeRecord(was)) || bytes.Equal(stored, FormJSON.EncodeRecord(was))
}

// EncodeRequestEntry returns e's stored form in the default form.
func EncodeRequestEntry(e *lockstate.RequestEntry) []byte { return FormCompact.EncodeRequestEntry(e) }

// DecodeRequestEntry strictly decodes a stored request entry, in either
// form.
func DecodeRequestEntry(b []byte) (*lockstate.RequestEntry, error) {
	var e *lockstate.RequestEntry
	var err error
	switch {
	case len(b) > 0 && b[0] == markEntryV1:
		e, err = decodeEntryCompact(b)
	case len(b) > 0 && (b[0] == markRecordV1 || b[0] == markRecordSetsV1 || b[0] == markRecordRWV1):
		err = fmt.Errorf("a record's bytes")
	default:
		e = new(lockstate.RequestEntry)
		err = strictDecode(b, e)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: request entry: %v", wire.ErrCorrupt, err)
	}
	if _, err := grant.ParseState(string(e.State)); err != nil {
		return nil, fmt.Errorf("%w: request entry: state: %v", wire.ErrCorrupt, err)
	}
	return e, nil
}

// EncodeSettings returns s's stored form.
func EncodeSettings(s *lockstate.Settings) []byte { return mustJSON(s) }

// DecodeSettings strictly decodes stored settings.
func DecodeSettings(b []byte) (lockstate.Settings, error) {
	var s lockstate.Settings
	if err := strictDecode(b, &s); err != nil {
		return lockstate.Settings{}, fmt.Errorf("%w: settings: %v", wire.ErrCorrupt, err)
	}
	return s, nil
}

// checkRecord verifies what every stored record must satisfy.
func checkRecord(r *lockstate.Record) error {
	if h := r.Holder; h != nil {
		if h.Grant.FenceToken == 0 || h.Grant.FenceToken > r.HighestFence {
			return fmt.Errorf("holder fence %d outside [1, highest %d]", h.Grant.FenceToken, r.HighestFence)
		}
	}
	for _, h := range r.Readers {
		if h.Grant.FenceToken == 0 || h.Grant.FenceToken > r.HighestFence {
			return fmt.Errorf("reader fence %d outside [1, highest %d]", h.Grant.FenceToken, r.HighestFence)
		}
	}
	for _, e := range r.Ended {
		if _, err := grant.ParseState(string(e.State)); err != nil {
			return fmt.Errorf("ended lease %s: %v", e.Lease, err)
		}
	}
	return nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("registry: encode: " + err.Error()) // plain structs always encode
	}
	return b
}

func strictDecode(b []byte, v any) error { return strictjson.Decode(b, v) }
