// This file proves, by random sequences of the registry's decisions
// (package lockstate, driven here as the shell drives it), that every
// record a decision produces keeps its stored form: it decodes, and
// encodes back to the same bytes. Stores compare a write's RecordWas by
// its encoding against the bytes they hold, so an unstable encoding would
// fail every compare of a record read back (a livelock, not a safety
// loss).
package registry

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// decisionWalk is one resource's record and settings as decisions leave
// them, and the registry instant.
type decisionWalk struct {
	lim lockstate.Limits
	rec *lockstate.Record
	set lockstate.Settings
	now int64
	seq int
	// other is inv/2's record, the second member of setAcquire's sets.
	other *lockstate.Record
}

func (m *decisionWalk) take(rec *lockstate.Record) {
	if rec != nil {
		m.rec = rec
	}
}

func (m *decisionWalk) acquire(t *rapid.T) {
	m.seq++
	owner := rapid.SampledFrom([]string{"spiffe://ex.org/w/a", "b", "c"}).Draw(t, "owner")
	req := wire.AcquireRequest{
		Resource: "inv/1", OperationID: fmt.Sprint("op-", m.seq), OperationClass: "settle",
		RequestID: fmt.Sprint("r", m.seq), TTLMs: rapid.Uint64Range(m.lim.TTLMsMin, 30_000).Draw(t, "ttlMs"),
		WaitMs: rapid.Uint64Range(0, 20_000).Draw(t, "waitMs"),
	}
	if len(m.rec.Waiters) > 0 && len(m.rec.Waiters[0].Members) == 0 && rapid.Bool().Draw(t, "head") {
		w := m.rec.Waiters[0] // the head asks again, so heads get served
		req.RequestID, req.TTLMs, req.WaitMs = w.RequestID, w.TTLMs, 5000
		owner = w.Owner
	}
	in, err := lockstate.NewAcquireInput(owner, req, m.now, m.lim)
	if err != nil {
		t.Fatalf("input: %v", err)
	}
	if d, err := lockstate.DecideAcquire(m.rec, nil, m.set, in, m.now, m.lim); err == nil {
		m.take(d.Record)
	}
}

// setAcquire decides a lock set's acquire over inv/1 (this record) and
// inv/2 (a second one), so set holders and tickets reach the record.
func (m *decisionWalk) setAcquire(t *rapid.T) {
	m.seq++
	owner := rapid.SampledFrom([]string{"spiffe://ex.org/w/a", "b", "c"}).Draw(t, "owner")
	req := wire.LockSetRequest{
		Members: []string{"inv/1", "inv/2"}, OperationID: fmt.Sprint("op-", m.seq), OperationClass: "settle",
		RequestID: fmt.Sprint("s", m.seq), TTLMs: rapid.Uint64Range(m.lim.TTLMsMin, 30_000).Draw(t, "ttlMs"),
		WaitMs: rapid.Uint64Range(0, 20_000).Draw(t, "waitMs"),
	}
	if len(m.rec.Waiters) > 0 && len(m.rec.Waiters[0].Members) > 0 && rapid.Bool().Draw(t, "head") {
		w := m.rec.Waiters[0] // the set at the head asks again
		id, _ := strings.CutPrefix(w.RequestID, wire.MemberRequestID("", 0))
		req.RequestID, req.TTLMs, req.WaitMs, owner = id, w.SetTTLMs, 5000, w.Owner
	}
	in, err := lockstate.NewSetInput(owner, req, m.now, m.lim)
	if err != nil {
		t.Fatalf("input: %v", err)
	}
	if m.other == nil {
		m.other = &lockstate.Record{}
	}
	d, err := lockstate.DecideSetAcquire([]*lockstate.Record{m.rec, m.other}, []*lockstate.RequestEntry{nil, nil}, m.set, in, m.now, m.lim)
	if err == nil && d.Records != nil {
		m.take(d.Records[0])
		if d.Records[1] != nil {
			m.other = d.Records[1]
		}
	}
}

func (m *decisionWalk) endHolder(t *rapid.T) {
	h := m.rec.Holder
	if h == nil {
		return
	}
	switch rapid.IntRange(0, 2).Draw(t, "how") {
	case 0:
		d, _ := lockstate.DecideRelease(m.rec, m.set, h.Grant.Owner, h.Grant.Lease, m.now, m.lim, nil)
		m.take(d.Record)
	case 1:
		d, _ := lockstate.DecideBreak(m.rec, m.set, m.now, m.lim, nil)
		m.take(d.Record)
	default:
		d, _ := lockstate.DecideRenew(m.rec, m.set, h.Grant.Owner, h.Grant.Lease, m.now, m.lim)
		m.take(d.Record)
	}
}

// storedFormIsStable: the record decodes, and encodes back to its bytes.
func (m *decisionWalk) storedFormIsStable(t *rapid.T) {
	b := EncodeRecord(m.rec)
	back, err := DecodeRecord(b)
	if err != nil {
		t.Fatalf("decode a record a decision produced: %v\n%x", err, b)
	}
	if again := EncodeRecord(back); string(again) != string(b) {
		t.Fatalf("stored form changes on a round trip:\n%x\n%x", b, again)
	}
}

func TestDecidedRecordsKeepTheirStoredForm(t *testing.T) {
	lim := DefaultConfig(5).limits()
	rapid.Check(t, func(t *rapid.T) {
		m := &decisionWalk{lim: lim, rec: &lockstate.Record{}, now: 1_780_000_000_000}
		t.Repeat(map[string]func(*rapid.T){
			"":        m.storedFormIsStable,
			"acquire": m.acquire,
			"set":     m.setAcquire,
			"end":     m.endHolder,
			"advance": func(t *rapid.T) { m.now += rapid.Int64Range(0, 12_000).Draw(t, "ms") },
			"floor": func(t *rapid.T) {
				next, err := lockstate.DecideRaiseFloor("inv/1", m.rec, m.set, m.rec.HighestFence+rapid.Uint64Range(0, 5).Draw(t, "up"))
				if err == nil {
					m.take(next)
				}
			},
			"bump": func(t *rapid.T) {
				if next, err := lockstate.DecideBump(m.set, lockstate.BumpInput{NowMs: m.now}); err == nil {
					m.set = next
				}
			},
		})
	})
}
