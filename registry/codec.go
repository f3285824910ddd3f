package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// Stores keep records, request entries and settings as JSON. Decoding is
// strict (unknown fields, trailing data and broken invariants are
// ErrCorrupt), because a store that can be edited by hand must never make
// the registry issue from state it misread.

// EncodeRecord returns rec's stored form.
func EncodeRecord(rec *Record) []byte { return mustJSON(rec) }

// DecodeRecord strictly decodes a stored record and checks its invariants.
func DecodeRecord(b []byte) (*Record, error) {
	var rec Record
	if err := strictDecode(b, &rec); err != nil {
		return nil, fmt.Errorf("%w: record: %v", wire.ErrCorrupt, err)
	}
	if err := rec.check(); err != nil {
		return nil, fmt.Errorf("%w: record: %v", wire.ErrCorrupt, err)
	}
	return &rec, nil
}

// EncodeRequestEntry returns e's stored form.
func EncodeRequestEntry(e *RequestEntry) []byte { return mustJSON(e) }

// DecodeRequestEntry strictly decodes a stored request entry.
func DecodeRequestEntry(b []byte) (*RequestEntry, error) {
	var e RequestEntry
	if err := strictDecode(b, &e); err != nil {
		return nil, fmt.Errorf("%w: request entry: %v", wire.ErrCorrupt, err)
	}
	if _, err := grant.ParseState(string(e.State)); err != nil {
		return nil, fmt.Errorf("%w: request entry: state: %v", wire.ErrCorrupt, err)
	}
	return &e, nil
}

// EncodeSettings returns s's stored form.
func EncodeSettings(s *Settings) []byte { return mustJSON(s) }

// DecodeSettings strictly decodes stored settings.
func DecodeSettings(b []byte) (Settings, error) {
	var s Settings
	if err := strictDecode(b, &s); err != nil {
		return Settings{}, fmt.Errorf("%w: settings: %v", wire.ErrCorrupt, err)
	}
	return s, nil
}

// check verifies what every record must satisfy.
func (r *Record) check() error {
	if h := r.Holder; h != nil {
		if h.Grant.FenceToken == 0 || h.Grant.FenceToken > r.HighestFence {
			return fmt.Errorf("holder fence %d outside [1, highest %d]", h.Grant.FenceToken, r.HighestFence)
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

func strictDecode(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return fmt.Errorf("trailing data")
	}
	return nil
}
