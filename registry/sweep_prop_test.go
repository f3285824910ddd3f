// This file proves, for retentions drawn over RequestRetentionMs's whole
// accepted range and leases of any TTL, hold and ending, that a sweep
// never deletes an entry before its lease's end plus the retention, and
// that the first sweep after the later of that instant and the lease's
// first expiry plus the retention deletes it; and that Validate refuses a
// retention outside the range, naming it.
package registry_test

import (
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fencegate/fencegate/registry"
)

func TestSweepKeepsEveryRetention(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		minMs := registry.DefaultConfig(epoch).RequestRetentionMsMin()
		retentionMs := rapid.OneOf(rapid.Just(minMs), rapid.Just(uint64(registry.RequestRetentionMsMax)),
			rapid.Uint64Range(minMs, registry.RequestRetentionMsMax)).Draw(rt, "retentionMs")
		e := newEnv(t, func(c *registry.Config) { c.RequestRetentionMs = retentionMs })
		r := req("inv/1", "r1")
		r.TTLMs = rapid.Uint64Range(2000, 600_000).Draw(rt, "ttlMs")
		a := e.mustAcquire("worker-a", r)
		start := e.clock.Now()
		renewals := rapid.IntRange(0, 3).Draw(rt, "renewals")
		for range renewals {
			e.clock.Advance(time.Duration(r.TTLMs/2) * time.Millisecond)
			if _, err := e.reg.Renew(e.ctx, "worker-a", "inv/1", a.Grant.Lease); err != nil {
				rt.Fatal(err)
			}
		}
		expiry := e.clock.Now().Add(time.Duration(r.TTLMs) * time.Millisecond)
		end := expiry
		if rapid.Bool().Draw(rt, "release") {
			e.clock.Advance(time.Duration(rapid.Uint64Range(0, r.TTLMs-1).Draw(rt, "heldMs")) * time.Millisecond)
			if err := e.reg.Release(e.ctx, "worker-a", "inv/1", a.Grant.Lease); err != nil {
				rt.Fatal(err)
			}
			end = e.clock.Now()
		}
		retention := time.Duration(retentionMs) * time.Millisecond
		firstLook := start.Add(time.Duration(r.TTLMs) * time.Millisecond).Add(retention)
		kept := end.Add(retention - time.Millisecond)
		e.clock.Advance(max(kept.Sub(e.clock.Now()), 0))
		if n, err := e.reg.SweepRequests(e.ctx); err != nil || n != 0 {
			rt.Fatalf("a sweep 1 ms before the end plus the retention deleted %d (%v)", n, err)
		}
		if _, err := e.reg.QueryRequest(e.ctx, "worker-a", "r1"); err != nil {
			rt.Fatalf("the entry is gone inside its retention: %v", err)
		}
		due := end.Add(retention)
		if firstLook.After(due) {
			due = firstLook
		}
		e.clock.Advance(max(due.Sub(e.clock.Now()), time.Millisecond))
		if n, err := e.reg.SweepRequests(e.ctx); err != nil || n != 1 {
			rt.Fatalf("the sweep when due deleted %d (%v)", n, err)
		}
	})
}

func TestRetentionOutsideItsRangeIsRefused(t *testing.T) {
	c := registry.DefaultConfig(epoch)
	for _, ms := range []uint64{1, c.RequestRetentionMsMin() - 1, registry.RequestRetentionMsMax + 1} {
		c.RequestRetentionMs = ms
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "[900500, 2592000000]") {
			t.Fatalf("retention %d: %v, want a refusal naming the range", ms, err)
		}
	}
	c.RequestRetentionMs = 0
	if err := c.Validate(); err != nil || c.RequestRetentionMs != 960_000 {
		t.Fatalf("default: %d %v, want 15 min plus the skew bound, in whole minutes", c.RequestRetentionMs, err)
	}
	// The default leaves room to raise the skew bound after DefaultConfig.
	c = registry.DefaultConfig(epoch)
	c.ClockSkewMaxMs, c.LockDelayMs = 30_000, 30_000
	c.TTLMsMin = 31_000
	if err := c.Validate(); err != nil {
		t.Fatalf("a skew bound of 30 s with the default retention: %v", err)
	}
}
