package dashboard

import (
	"cmp"
	"context"
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/grant"
)

// Page refresh.
const (
	// ViewRefreshMs: the page's data is rebuilt at most once a second,
	// however many watch it.
	ViewRefreshMs = 1000
	// ViewTimeoutMs bounds one rebuild's reads, 3 s.
	ViewTimeoutMs = 3000
	// DecisionsShownMax is how many decisions the page lists, newest first.
	DecisionsShownMax = 50
	// unknownWarnMs and unknownBadMs are the ages of an open UNKNOWN that
	// the attention list flags (the specification: reconciled within 15
	// minutes).
	unknownWarnMs, unknownBadMs = 10 * 60 * 1000, 15 * 60 * 1000
)

// data is everything the page shows, whoever looks.
type data struct {
	At             time.Time
	Attention      []Attention
	Resources      []ResourceRow
	Gates          []GateView
	Decisions      []DecisionRow
	Handoff, Rates template.HTML
	HandoffCount   uint64
	HandoffP50     string
	HandoffP99     string
	Trust          Trust
	Actions        []Action
	// StuckWaitMs and StuckHoldMs are the thresholds the rows were
	// judged by (stuck.go).
	StuckWaitMs, StuckHoldMs int64
}

// Attention is one line of "is anything stuck": Level bad or warn.
type Attention struct{ Level, Text string }

// DecisionRow is a decision with the gate that made it.
type DecisionRow struct {
	Gate string
	report.Decision
}

// Trust is the registry's epochs and the trust bundle.
type Trust struct {
	StoreEngine               string
	IssuerEpoch, RevokedBelow uint64
	SettingsErr               string
	Bundle                    *grant.BundleFile
	BundleErr                 string
}

// snapshot returns the page's data, rebuilt if older than ViewRefreshMs.
func (d *Dashboard) snapshot(ctx context.Context) *data {
	now := d.cfg.Clock.Now()
	d.mu.Lock()
	d.viewedAt = now
	d.mu.Unlock()
	d.build.Lock()
	defer d.build.Unlock()
	if c := d.cached; c != nil && now.Sub(c.At) < ViewRefreshMs*time.Millisecond {
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, ViewTimeoutMs*time.Millisecond)
	defer cancel()
	v := &data{At: now, Gates: d.gates.snapshot(now), Actions: d.actions.list(now), StuckWaitMs: d.rules.waitMs, StuckHoldMs: d.rules.holdMs}
	v.Resources = d.readRows(ctx, d.names(v.Gates))
	d.stuck.update(v.Resources)
	attachGates(v.Resources, v.Gates)
	v.Decisions = decisions(v.Gates)
	bs := d.samples.handoff()
	v.Handoff, v.Rates = histogramSVG(bs), ratesSVG(d.samples.rates())
	for _, b := range bs {
		v.HandoffCount += b.Count
	}
	v.HandoffP50, v.HandoffP99 = seconds(quantile(bs, 0.5)), seconds(quantile(bs, 0.99))
	v.Trust = d.trust(ctx)
	v.Attention = attention(v, now.UnixMilli())
	d.cached = v
	return v
}

// names are the resources to show: those paused at a gate first, then
// those a lock scan found stuck, then the most recently seen,
// ResourcesShownMax in all.
func (d *Dashboard) names(gates []GateView) []string {
	var out []string
	for _, g := range gates {
		for _, r := range g.Report.Resources {
			if name := rowOf(r.Resource); r.Paused && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	for _, r := range append(d.stuck.list(), d.known.recent(ResourcesShownMax)...) {
		if name := rowOf(r); len(out) < ResourcesShownMax && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// attachGates adds each gate's view to the rows and orders them: paused
// somewhere first, then stuck, then held, then with waiters, then by
// name.
func attachGates(rows []ResourceRow, gates []GateView) {
	attach := func(row *ResourceRow) {
		for _, g := range gates {
			for _, r := range g.Report.Resources {
				if r.Resource == row.Resource {
					row.Gates = append(row.Gates, GateCell{Gate: g.ID, HighestFence: r.HighestFence, Mode: r.Mode, Paused: r.Paused, Reason: r.PausedReason})
				}
			}
		}
	}
	for i := range rows {
		attach(&rows[i])
		for j := range rows[i].Slots {
			attach(&rows[i].Slots[j])
		}
	}
	key := func(r ResourceRow) int {
		switch {
		case r.PausedSomewhere():
			return 0
		case r.Stuck():
			return 1
		case r.Holder != "" || r.SlotsHeld > 0 || len(r.Readers) > 0:
			return 2
		case r.Waiters > 0:
			return 3
		}
		return 4
	}
	slices.SortStableFunc(rows, func(a, b ResourceRow) int {
		return cmp.Or(cmp.Compare(key(a), key(b)), strings.Compare(a.Resource, b.Resource))
	})
}

// PausedSomewhere reports whether a gate has the row's resource (or,
// for a semaphore, one of its slots) paused.
func (r ResourceRow) PausedSomewhere() bool {
	return slices.ContainsFunc(r.Gates, func(c GateCell) bool { return c.Paused }) || slices.ContainsFunc(r.Slots, ResourceRow.PausedSomewhere)
}

// decisions merges the gates' decisions, newest first.
func decisions(gates []GateView) []DecisionRow {
	var out []DecisionRow
	for _, g := range gates {
		for _, dec := range g.Decisions {
			out = append(out, DecisionRow{Gate: g.ID, Decision: dec})
		}
	}
	slices.SortStableFunc(out, func(a, b DecisionRow) int {
		return cmp.Or(cmp.Compare(b.AtMs, a.AtMs), strings.Compare(a.Gate, b.Gate), cmp.Compare(b.Seq, a.Seq))
	})
	return out[:min(len(out), DecisionsShownMax)]
}

func (d *Dashboard) trust(ctx context.Context) Trust {
	t := Trust{StoreEngine: d.cfg.StoreEngine, IssuerEpoch: d.cfg.Registry.Config().IssuerEpoch}
	if snap, err := d.cfg.Store.Read(ctx, "", nil); err != nil {
		t.SettingsErr = err.Error()
	} else {
		t.RevokedBelow = snap.Settings.RevokedBelowEpoch
	}
	if d.cfg.Bundle != nil {
		if b, err := d.cfg.Bundle(); err != nil {
			t.BundleErr = err.Error()
		} else {
			f := b.File()
			t.Bundle = &f
		}
	}
	return t
}

// attention lists what an operator should look at first.
func attention(v *data, nowMs int64) []Attention {
	var out []Attention
	for _, g := range v.Gates {
		for _, r := range g.Report.Resources {
			if r.Paused {
				out = append(out, Attention{"bad", fmt.Sprintf("%s is PAUSED at gate %s (highestFence %d): %s", r.Resource, g.ID, r.HighestFence, r.PausedReason)})
			}
			for _, rec := range r.Recent {
				if rec.Kind == "REGRESSION_SUSPECTED" {
					out = append(out, Attention{"warn", fmt.Sprintf("%s at gate %s: REGRESSION_SUSPECTED at fence %d", r.Resource, g.ID, rec.Fence)})
				}
			}
		}
		if g.Stale {
			out = append(out, Attention{"warn", fmt.Sprintf("gate %s has not reported for %s", g.ID, ms(g.AgeMs))})
		}
		for _, u := range g.Report.Unknown {
			age := g.Report.ReportedAtMs - u.SinceMs + g.AgeMs
			switch {
			case age >= unknownBadMs:
				out = append(out, Attention{"bad", fmt.Sprintf("MUTATION_UNKNOWN %s/%s at gate %s open for %s", u.Resource, u.OperationID, g.ID, ms(age))})
			case age >= unknownWarnMs:
				out = append(out, Attention{"warn", fmt.Sprintf("MUTATION_UNKNOWN %s/%s at gate %s open for %s", u.Resource, u.OperationID, g.ID, ms(age))})
			}
		}
	}
	for _, r := range v.Resources {
		out = append(out, stuckAttention(r, v.StuckWaitMs, v.StuckHoldMs)...)
	}
	for _, r := range v.Resources {
		if r.Err != "" {
			out = append(out, Attention{"warn", fmt.Sprintf("reading %s failed: %s", r.Resource, r.Err)})
		}
	}
	if v.Trust.SettingsErr != "" {
		out = append(out, Attention{"warn", "reading the registry's settings failed: " + v.Trust.SettingsErr})
	}
	return out
}

// ms prints a duration in milliseconds the way people read it: 800ms,
// 2.9s, 4m12s, 2m, 1h1m.
func ms(v int64) string {
	d := time.Duration(v) * time.Millisecond
	switch {
	case d < time.Second:
		return d.String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
