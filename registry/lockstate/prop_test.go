// This file proves, by random op sequences over the pure core (rapid), the
// lease invariants: a grant only when no lease is live, never inside
// lock-delay after an expiry, with a fence above every earlier fence and the
// floor and inside the current fence range, to the queue's head; a release
// frees at once; and a bump ends every lease granted before it. (That
// every record it produces keeps its stored form is registry's
// codec_prop_test.go: the stored form is the shell's.)
package lockstate

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/fencegate/fencegate/grant"
)

// coreModel drives one resource through the core and remembers what an
// oracle needs: the last fence issued and how and when the last lease ended.
type coreModel struct {
	lim       Limits
	rec       *Record
	set       Settings
	now       int64
	seq       int
	lastFence uint64
	endKind   grant.State // how the last lease ended ("" if none yet)
	endAt     int64
}

// observeEnds notes how the lease a decision ended, if any, ended: the
// lease rec (the record written) added to Ended that prev did not end. A
// lease a bump ended (Broken, as a break's) frees the resource at once,
// so it sets no lock-delay to check.
func (m *coreModel) observeEnds(prev, rec *Record) {
	if rec == nil || len(rec.Ended) == 0 {
		return
	}
	e := rec.Ended[len(rec.Ended)-1]
	if _, known := findEnded(prev, e.Lease); known {
		return
	}
	m.endKind, m.endAt = e.State, e.AtMs
	if e.Broken {
		m.endKind = ""
	}
}

func (m *coreModel) acquire(t *rapid.T) {
	owner := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "owner")
	wait := rapid.Bool().Draw(t, "wait")
	m.seq++
	in := input(owner, fmt.Sprint("r", m.seq), wait, m.now+rapid.Int64Range(1, 20_000).Draw(t, "waitMs"))
	// Retry a queued waiter's own ticket sometimes, so heads get served.
	if len(m.rec.Waiters) > 0 && rapid.Bool().Draw(t, "head") {
		w := m.rec.Waiters[0]
		in = input(w.Owner, w.RequestID, true, w.DeadlineMs)
	}
	before, _ := Normalize(m.rec, m.set, m.now, m.lim)
	d, err := DecideAcquire(m.rec, nil, m.set, in, m.now, m.lim)
	if err != nil {
		return
	}
	m.observeEnds(m.rec, d.Record) // a lease that ended inside this decision counts
	if d.Outcome == AcquireGranted {
		if before.Holder != nil {
			t.Fatalf("granted over live holder %s", before.Holder.Grant.Lease)
		}
		if m.endKind == grant.StateExpired && m.now < m.endAt+int64(m.lim.LockDelayMs) {
			t.Fatalf("granted %d ms after an expiry, lock-delay %d", m.now-m.endAt, m.lim.LockDelayMs)
		}
		if d.Body.FenceToken <= m.lastFence || d.Body.FenceToken <= m.rec.Floor {
			t.Fatalf("fence %d not above last %d and floor %d", d.Body.FenceToken, m.lastFence, m.rec.Floor)
		}
		if FenceGenerationOf(d.Body.FenceToken) != m.set.FenceGeneration {
			t.Fatalf("fence %d outside generation %d's range", d.Body.FenceToken, m.set.FenceGeneration)
		}
		if len(before.Waiters) > 0 && waiterIndex(before, in.Key()) != 0 && m.now < before.FreeAtMs+int64(m.lim.HandoffClaimMs) {
			t.Fatalf("granted to %s ahead of head %s", in.Owner, before.Waiters[0].Owner)
		}
		m.lastFence = d.Body.FenceToken
	}
	if d.Record != nil {
		m.rec = d.Record
	}
}

func (m *coreModel) release(t *rapid.T) {
	if m.rec.Holder == nil {
		return
	}
	h := m.rec.Holder.Grant
	before, _ := Normalize(m.rec, m.set, m.now, m.lim)
	d, err := DecideRelease(m.rec, m.set, h.Owner, h.Lease, m.now, m.lim, none)
	if err != nil {
		return
	}
	if d.Record != nil {
		if d.Record.FreeAtMs > m.now {
			t.Fatalf("release did not free at once: freeAt %d now %d", d.Record.FreeAtMs, m.now)
		}
		if nh := d.Record.Holder; nh != nil { // handed to the head waiter
			if len(before.Waiters) == 0 || nh.Grant.Owner != before.Waiters[0].Owner || nh.Grant.RequestID != before.Waiters[0].RequestID {
				t.Fatalf("release handed the lease to %s, not the head", nh.Grant.Owner)
			}
			if nh.Grant.FenceToken <= m.lastFence || nh.Grant.FenceToken <= m.rec.Floor {
				t.Fatalf("handoff fence %d not above %d", nh.Grant.FenceToken, m.lastFence)
			}
			m.lastFence = nh.Grant.FenceToken
		}
		m.observeEnds(m.rec, d.Record)
		m.rec = d.Record
	}
}

func (m *coreModel) renew(t *rapid.T) {
	if m.rec.Holder == nil {
		return
	}
	h := m.rec.Holder.Grant
	d, err := DecideRenew(m.rec, m.set, h.Owner, h.Lease, m.now, m.lim)
	if err == nil {
		if m.now >= m.rec.Holder.ExpiresAtMs {
			t.Fatal("renewed an expired lease")
		}
		if FenceGenerationOf(h.FenceToken) < m.set.FenceGeneration {
			t.Fatalf("renewed lease %s, granted before the bump to generation %d", h.Lease, m.set.FenceGeneration)
		}
		m.rec = d.Record
	}
}

func TestCoreInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &coreModel{lim: testLimits(), rec: &Record{}, now: t0}
		t.Repeat(map[string]func(*rapid.T){
			"acquire": m.acquire,
			"release": m.release,
			"renew":   m.renew,
			"advance": func(t *rapid.T) { m.now += rapid.Int64Range(0, 12_000).Draw(t, "ms") },
			"floor": func(t *rapid.T) {
				if next, err := DecideRaiseFloor("r", m.rec, m.set, m.lastFence+rapid.Uint64Range(0, 5).Draw(t, "up")); err == nil && next != nil {
					m.rec = next
				}
			},
			"bump": func(t *rapid.T) {
				// Half the time a clock far behind, so the generation
				// steps by one from the current and floors meet ranges.
				nowMs := m.now
				if rapid.Bool().Draw(t, "clockBehind") {
					nowMs = 0
				}
				next, err := DecideBump(m.set, BumpInput{NowMs: nowMs})
				if err != nil {
					t.Fatal(err)
				}
				if next.FenceGeneration <= m.set.FenceGeneration || next.FenceGeneration<<FenceCounterBits <= m.lastFence {
					t.Fatalf("bump to generation %d: not above generation %d and fence %d", next.FenceGeneration, m.set.FenceGeneration, m.lastFence)
				}
				m.set = next
			},
			"revoke": func(t *rapid.T) {
				// Revoke the current epoch, then move the registry to the next.
				m.set.RevokedBelowEpoch = m.lim.IssuerEpoch
				if rapid.Bool().Draw(t, "bump") {
					m.set.RevokedBelowEpoch = m.lim.IssuerEpoch + 1
					m.lim.IssuerEpoch++
				}
			},
		})
	})
}
