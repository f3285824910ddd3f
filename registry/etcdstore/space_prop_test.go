// This file proves, for every quota, high- and low-water mark and poll
// interval drawn over their accepted ranges, that the space guard refuses
// grants from the high-water mark and under NOSPACE, never below the
// low-water mark without the alarm, and resumes once under the low-water
// mark (hysteresis, so it does not flap); that values outside the ranges
// are refused naming the range; and that the embedded member takes every
// quota and compaction retention in its range and refuses the rest.
package etcdstore

import (
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fencegate/fencegate/registry"
)

func TestSpaceGuardOverItsRanges(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		high := rapid.Float64Range(SpaceHighWaterMin, SpaceHighWaterMax).Draw(rt, "high")
		low := rapid.Float64Range(SpaceLowWaterMin, high-SpaceWaterGapMin).Draw(rt, "low")
		opt, err := SpaceOptions{HighWater: high, LowWater: low,
			Interval:          time.Duration(rapid.Int64Range(int64(SpaceIntervalMin), int64(SpaceIntervalMax)).Draw(rt, "interval")),
			DefragIntervalMin: time.Duration(rapid.Int64Range(0, int64(SpaceIntervalMax)).Draw(rt, "defragInterval")),
		}.withDefaults()
		if err != nil {
			rt.Fatalf("options in range refused: %v", err)
		}
		quota := rapid.Int64Range(EmbeddedQuotaBytesMin, EmbeddedQuotaBytesMax).Draw(rt, "quota")
		wasLow := false
		for i := range rapid.IntRange(1, 30).Draw(rt, "polls") {
			st := registry.SpaceStatus{QuotaBytes: quota, NoSpace: rapid.Float64().Draw(rt, "alarm") < 0.1,
				SizeBytes: rapid.Int64Range(0, quota).Draw(rt, "size")}
			isLow := guardLow(st, wasLow, opt.HighWater, opt.LowWater)
			frac := float64(st.SizeBytes) / float64(quota)
			switch {
			case (st.NoSpace || frac >= opt.HighWater+1e-9) && !isLow:
				rt.Fatalf("poll %d: %.4f of the quota (alarm %v): grants not refused", i, frac, st.NoSpace)
			case !st.NoSpace && frac < opt.LowWater-1e-9 && isLow:
				rt.Fatalf("poll %d: %.4f of the quota, no alarm: grants refused", i, frac)
			case !st.NoSpace && frac >= opt.LowWater+1e-9 && frac < opt.HighWater-1e-9 && isLow != wasLow:
				rt.Fatalf("poll %d: %.4f, between the marks: the guard flapped from %v", i, frac, wasLow)
			}
			wasLow = isLow
		}
		// A quota not known stops grants at the alarm only.
		if guardLow(registry.SpaceStatus{SizeBytes: quota}, true, high, low) {
			rt.Fatal("an unknown quota refused grants without the alarm")
		}
	})
}

func TestSpaceOptionsOutsideTheirRangesAreRefused(t *testing.T) {
	for _, c := range []struct {
		opt  SpaceOptions
		want string
	}{
		{SpaceOptions{HighWater: 0.49}, "want 0.5 to 0.95"},
		{SpaceOptions{HighWater: 0.96}, "want 0.5 to 0.95"},
		{SpaceOptions{HighWater: 0.9, LowWater: 0.86}, "want 0.25 to 0.85"},
		{SpaceOptions{LowWater: 0.2}, "want 0.25 to 0.85"},
		{SpaceOptions{Interval: time.Millisecond}, "want 100ms to 1h0m0s"},
		{SpaceOptions{Interval: 2 * time.Hour}, "want 100ms to 1h0m0s"},
		{SpaceOptions{DefragIntervalMin: -time.Second}, "want up to 1h0m0s"},
		{SpaceOptions{QuotaBytes: -1}, "want 0"},
	} {
		if _, err := NewSpace(nil, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a refusal naming %q", c.opt, err, c.want)
		}
	}
	if _, err := NewSpace(nil, SpaceOptions{}); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

func TestEmbeddedSpaceOptionsOverTheirRanges(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		quota := rapid.OneOf(rapid.Just(int64(EmbeddedQuotaBytesMin)), rapid.Just(int64(EmbeddedQuotaBytesMax)),
			rapid.Int64Range(EmbeddedQuotaBytesMin, EmbeddedQuotaBytesMax)).Draw(rt, "quota")
		retention := time.Duration(rapid.Int64Range(int64(EmbeddedCompactionRetentionMin), int64(EmbeddedCompactionRetentionMax)).Draw(rt, "retention"))
		cfg, err := embedConfig(t.TempDir(), EmbeddedOptions{QuotaBytes: quota, CompactionRetention: retention})
		if err != nil {
			rt.Fatalf("in range: %v", err)
		}
		if got, err := time.ParseDuration(cfg.AutoCompactionRetention); err != nil || got != retention || cfg.QuotaBackendBytes != quota {
			rt.Fatalf("config %q %d (%v), want %v %d", cfg.AutoCompactionRetention, cfg.QuotaBackendBytes, err, retention, quota)
		}
	})
	for _, opt := range []EmbeddedOptions{{QuotaBytes: EmbeddedQuotaBytesMin - 1}, {QuotaBytes: EmbeddedQuotaBytesMax + 1},
		{CompactionRetention: EmbeddedCompactionRetentionMin - 1}, {CompactionRetention: EmbeddedCompactionRetentionMax + 1}} {
		if _, err := embedConfig(t.TempDir(), opt); err == nil || !strings.Contains(err.Error(), "want ") {
			t.Errorf("%+v: %v, want a refusal naming the range", opt, err)
		}
	}
}
