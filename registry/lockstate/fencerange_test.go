// This file proves the fence-range rules of the pure core: how the floor
// and the range compose into the next fence, that a counter never crosses
// into the next generation's range, how a bump picks its generation, and
// that a bump ends the leases granted before it.
package lockstate

import (
	"errors"
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

func TestNextFenceComposesFloorAndRange(t *testing.T) {
	const g = 1_784_455_200 // a generation from the clock: 2026-07-19 10:00:00 UTC
	start := uint64(g) << 32
	for _, c := range []struct {
		name            string
		highest, floor  uint64
		gen             uint64
		want            uint64
		wantRangeRefuse bool
	}{
		{name: "before any bump, as always", highest: 41, want: 42},
		{name: "before any bump, floor above", highest: 41, floor: 50, want: 51},
		{name: "after a bump, the range starts above", highest: 41, floor: 50, gen: g, want: start + 1},
		{name: "inside the range, the counter counts", highest: start + 7, gen: g, want: start + 8},
		{name: "a floor inside the range wins", highest: start + 7, floor: start + 100, gen: g, want: start + 101},
		{name: "generation 0's last fence", highest: FenceCounterMax - 1, want: FenceCounterMax},
		{name: "generation 0 used up", highest: FenceCounterMax, wantRangeRefuse: true},
		{name: "the counter never crosses into the next range", highest: start | FenceCounterMax, gen: g, wantRangeRefuse: true},
		{name: "a fence of a later range (another store's) is never gone below", highest: (g + 5) << 32, gen: g, wantRangeRefuse: true},
		{name: "the last generation ends at the last uint64", highest: ^uint64(0) - 1, gen: FenceGenerationMax, want: ^uint64(0)},
		{name: "and is used up there", highest: ^uint64(0), gen: FenceGenerationMax, wantRangeRefuse: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := nextFence("r", &Record{HighestFence: c.highest, Floor: c.floor}, Settings{FenceGeneration: c.gen})
			if c.wantRangeRefuse {
				if !errors.Is(err, wire.ErrFenceRange) {
					t.Fatalf("got fence %d, %v; want ErrFenceRange", got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %d, %v; want %d", got, err, c.want)
			}
		})
	}
}

func TestDecideBump(t *testing.T) {
	const nowMs = 1_784_455_200_123 // 2026-07-19 10:00:00.123 UTC
	const nowS = nowMs / 1000
	for _, c := range []struct {
		name string
		cur  uint64
		in   BumpInput
		want uint64
	}{
		{name: "the first bump takes the clock's second", in: BumpInput{NowMs: nowMs}, want: nowS},
		{name: "a generation ahead of the clock moves by one", cur: nowS + 10, in: BumpInput{NowMs: nowMs}, want: nowS + 11},
		{name: "a clock that went back still moves up", cur: nowS, in: BumpInput{NowMs: nowMs - 3_600_000}, want: nowS + 1},
		{name: "no clock: plus one", cur: 4, want: 5},
		{name: "above a fence of a later range", in: BumpInput{NowMs: nowMs, Above: (nowS+100)<<32 | 12}, want: nowS + 101},
		{name: "above a fence of an earlier range: the clock wins", in: BumpInput{NowMs: nowMs, Above: 5 << 32}, want: nowS},
		{name: "above a generation-0 fence", cur: 0, in: BumpInput{Above: 1 << 20}, want: 1},
		{name: "above what this registry has seen", cur: 3, in: BumpInput{NowMs: nowMs, Seen: nowS + 7}, want: nowS + 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecideBump(Settings{FenceGeneration: c.cur, RevokedBelowEpoch: 9}, c.in)
			if err != nil || got.FenceGeneration != c.want || got.RevokedBelowEpoch != 9 || got.FenceBumpedAtMs != c.in.NowMs {
				t.Fatalf("got %+v, %v; want generation %d, the rest kept", got, err, c.want)
			}
		})
	}
	for _, in := range []BumpInput{{Above: ^uint64(0)}, {Seen: FenceGenerationMax}} {
		if _, err := DecideBump(Settings{}, in); !errors.Is(err, wire.ErrFenceRange) {
			t.Errorf("bump %+v beyond the last generation: %v, want ErrFenceRange", in, err)
		}
	}
	if _, err := DecideBump(Settings{FenceGeneration: FenceGenerationMax}, BumpInput{}); !errors.Is(err, wire.ErrFenceRange) {
		t.Errorf("bump from the last generation: %v, want ErrFenceRange", err)
	}
}

func TestFloorBeyondTheRangeAsksForABump(t *testing.T) {
	rec := &Record{HighestFence: 3}
	if _, err := DecideRaiseFloor("r", rec, Settings{}, 1<<40); !errors.Is(err, wire.ErrFenceRange) {
		t.Fatalf("floor beyond generation 0's range: %v, want ErrFenceRange", err)
	}
	next, err := DecideRaiseFloor("r", rec, Settings{FenceGeneration: 1 << 9}, 1<<40)
	if err != nil || next.Floor != 1<<40 {
		t.Fatalf("floor inside generation 512's range: %+v, %v", next, err)
	}
}

// A bump ends the lease of a grant of an older generation at the next
// decision (normalize) and at once for every answer about it (entryState),
// without lock-delay, as a break does.
func TestBumpEndsOlderLeases(t *testing.T) {
	lim := testLimits()
	rec := held("a", 3, t0)
	entry := &RequestEntry{Grant: rec.Holder.Grant, ParamsDigest: rec.Holder.ParamsDigest, State: grant.StateHeld}
	bumped := Settings{FenceGeneration: 2}
	if st := EntryState(rec, entry, Settings{}, t0+1); st != grant.StateHeld {
		t.Fatalf("before the bump: %s", st)
	}
	if st := EntryState(rec, entry, bumped, t0+1); st != grant.StateExpired {
		t.Fatalf("after the bump: %s, want EXPIRED", st)
	}
	if _, err := DecideRenew(rec, bumped, "a", rec.Holder.Grant.Lease, t0+1, lim); !errors.Is(err, wire.ErrLeaseBroken) {
		t.Fatalf("renew after the bump: %v, want ErrLeaseBroken", err)
	}
	d, err := DecideAcquire(rec, nil, bumped, input("b", "rb", false, 0), t0+2, lim)
	if err != nil || d.Outcome != AcquireGranted {
		t.Fatalf("acquire after the bump: %v %v, want granted at once (no lock-delay)", d.Outcome, err)
	}
	if want := uint64(2)<<32 + 1; d.Body.FenceToken != want {
		t.Fatalf("fence %d, want %d", d.Body.FenceToken, want)
	}
	if e := d.Record.Ended[len(d.Record.Ended)-1]; e.State != grant.StateExpired || !e.Broken || e.AtMs != t0+2 {
		t.Fatalf("the ended lease: %+v", e)
	}
}
