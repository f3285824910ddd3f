// Package stored is the byte form in which the key-value adapters
// (gate/objgate, gate/redisgate) keep the gate's state and records: JSON
// with every gate.FenceState field, digests as "sha256:…", instants in
// grant.TimeLayout. Decoding is strict (unknown fields, malformed digests
// or instants are errors): what a store hands back is checked, never
// trusted into a decision half-read. Receipts they keep in gate's own
// JSON form (gate.Receipt.MarshalJSON).
package stored

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// State is gate.FenceState on the store.
type State struct {
	Resource            string `json:"resource"`
	Mode                string `json:"mode"`
	HighestFence        uint64 `json:"highestFence"`
	Root                string `json:"root"`
	LastSegmentSeq      uint64 `json:"lastSegmentSeq"`
	GrantDigest         string `json:"grant"`
	GrantIssuedAt       string `json:"grantIssuedAt"`
	MinPolicyGeneration uint64 `json:"minPolicyGeneration"`
	Paused              bool   `json:"paused"`
	PausedReason        string `json:"pausedReason"`
	Floor               uint64 `json:"floor"`
	FloorAt             string `json:"floorAt"`
}

// FromState converts every field of s.
func FromState(s gate.FenceState) State {
	return State{Resource: s.Resource, Mode: string(s.Mode), HighestFence: s.HighestFence, Root: digest(s.Root),
		LastSegmentSeq: s.LastSegmentSeq, GrantDigest: digest(s.GrantDigest), GrantIssuedAt: instant(s.GrantIssuedAt),
		MinPolicyGeneration: s.MinPolicyGeneration, Paused: s.Paused, PausedReason: s.PausedReason,
		Floor: s.Floor, FloorAt: instant(s.FloorAt)}
}

// GateState converts back, checking every field.
func (j State) GateState() (gate.FenceState, error) {
	s := gate.FenceState{Resource: j.Resource, Mode: gate.Mode(j.Mode), HighestFence: j.HighestFence, LastSegmentSeq: j.LastSegmentSeq,
		MinPolicyGeneration: j.MinPolicyGeneration, Paused: j.Paused, PausedReason: j.PausedReason, Floor: j.Floor}
	if _, err := gate.ParseMode(j.Mode); err != nil {
		return s, fmt.Errorf("stored: state of %s: %w", j.Resource, err)
	}
	var err error
	for _, f := range []struct {
		dst *grant.Digest
		src string
	}{{&s.Root, j.Root}, {&s.GrantDigest, j.GrantDigest}} {
		if *f.dst, err = parseDigest(f.src); err != nil {
			return s, fmt.Errorf("stored: state of %s: %w", j.Resource, err)
		}
	}
	for _, f := range []struct {
		dst *time.Time
		src string
	}{{&s.GrantIssuedAt, j.GrantIssuedAt}, {&s.FloorAt, j.FloorAt}} {
		if *f.dst, err = parseInstant(f.src); err != nil {
			return s, fmt.Errorf("stored: state of %s: %w", j.Resource, err)
		}
	}
	return s, nil
}

// Record is one alarm, quarantine, shadow-log or operator-action entry.
type Record struct {
	Kind          string `json:"kind"` // RecordAlarm, RecordQuarantine, RecordShadow or RecordAction
	Resource      string `json:"resource"`
	AlarmKind     string `json:"alarmKind,omitempty"`
	Outcome       string `json:"outcome,omitempty"`
	FenceToken    uint64 `json:"fenceToken,omitempty"`
	SegmentSeq    uint64 `json:"segmentSeq,omitempty"`
	HighestFence  uint64 `json:"highestFence,omitempty"`
	OperationID   string `json:"operationId,omitempty"`
	GrantDigest   string `json:"grant,omitempty"`
	PayloadDigest string `json:"payloadDigest,omitempty"`
	Original      string `json:"originalReceipt,omitempty"`
	Operator      string `json:"operator,omitempty"`
	Detail        string `json:"detail"`
	AtMs          int64  `json:"atMs"`
}

// Record kinds.
const (
	RecordAlarm      = "alarm"
	RecordQuarantine = "quarantine"
	RecordShadow     = "shadow"
	RecordAction     = "action"
)

// Records returns what decision d asks to record besides receipts and
// state, at atMs (the gate's clock): an alarm, a quarantine entry, a
// shadow-log entry, in that order. prior is the receipt Decide compared
// with (for a quarantine entry).
func Records(d gate.Decision, v *gate.Verified, prior *gate.Receipt, atMs int64) []Record {
	if !d.Alarm && !(d.Quarantine && prior != nil) && !d.ShadowLog {
		return nil // the common case: an accept records nothing here
	}
	m := &v.Mutation
	base := Record{Resource: m.Resource, Outcome: string(d.Outcome), FenceToken: m.FenceToken, SegmentSeq: m.SegmentSeq,
		HighestFence: d.State.HighestFence, OperationID: m.OperationID, GrantDigest: v.GrantDigest.String(),
		PayloadDigest: m.PayloadDigest.String(), AtMs: atMs}
	if r, ok := d.Err.(*gate.Rejection); ok {
		base.Detail = r.Reason
	}
	var out []Record
	if d.Alarm {
		r := base
		r.Kind, r.AlarmKind = RecordAlarm, string(d.AlarmKind)
		out = append(out, r)
	}
	if d.Quarantine && prior != nil {
		r := base
		r.Kind, r.Original = RecordQuarantine, prior.ID()
		out = append(out, r)
	}
	if d.ShadowLog {
		r := base
		r.Kind = RecordShadow
		out = append(out, r)
	}
	return out
}

// Encode marshals v (one of this package's types).
func Encode(v any) []byte {
	switch v := v.(type) {
	case State:
		return AppendState(make([]byte, 0, 384), v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("stored: encode %T: %v", v, err)) // plain structs of strings and numbers
	}
	return b
}

// Decode unmarshals b into v strictly: unknown fields and trailing data
// are errors.
func Decode(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("stored: decode %T: %w", v, err)
	}
	if d.More() {
		return fmt.Errorf("stored: decode %T: trailing data", v)
	}
	return nil
}

func digest(d grant.Digest) string {
	if d.IsZero() {
		return ""
	}
	return d.String()
}

func parseDigest(s string) (grant.Digest, error) {
	if s == "" {
		return grant.Digest{}, nil
	}
	return grant.ParseDigest(s)
}

func instant(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(grant.TimeLayout)
}

func parseInstant(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(grant.TimeLayout, s)
	if err != nil {
		return t, fmt.Errorf("instant %q: %w", s, err)
	}
	return t.UTC(), nil
}
