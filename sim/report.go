package sim

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencegate/fencegate/gate"
)

// UnknownReconcileBudgetS is the specification's gate: every UNKNOWN is
// reconciled within 15 minutes.
const UnknownReconcileBudgetS = 15 * 60

// Report is a run's result. Its JSON form is what `fencegate sim --json`
// prints.
type Report struct {
	Rounds          int                `json:"rounds"`
	Seed            uint64             `json:"seed"`
	Round           int                `json:"round,omitempty"`
	Unsafe          bool               `json:"unsafe"`
	Broken          string             `json:"brokenProtection,omitempty"`
	Faults          map[string]float64 `json:"faults"`
	SkewBeyondBound bool               `json:"skewBeyondBound"`
	Alg             string             `json:"alg"`
	StatusQuery     bool               `json:"statusQuery"`
	SkewBoundMs     int64              `json:"skewBoundMs"`

	StaleAccepted         int `json:"staleAccepted"`
	StaleNotHolder        int `json:"staleNotHolder"`
	StaleAfterHigherFence int `json:"staleAfterHigherFence"`
	ForgedAccepted        int `json:"forgedAccepted"`
	HighestFencePolluted  int `json:"highestFencePolluted"`
	SegmentSkipAccepted   int `json:"segmentSkipAccepted"`
	RegressionAccepted    int `json:"regressionAccepted"`
	LostUpdates           int `json:"lostUpdates"`
	FenceReusedByRegistry int `json:"fenceReusedByRegistry"`

	// Availability, each required to be 0: a pause while the registry never
	// went backwards, the newest holder's first write refused without a
	// regression, a queued ticket of a request that already had an answer,
	// a grant that arrived with its local deadline already passed.
	SpuriousPauses  int `json:"spuriousPauses"`
	BlockedHandoffs int `json:"blockedHandoffs"`
	GhostWaiters    int `json:"ghostWaiters"`
	UnusableGrants  int `json:"unusableGrants"`

	// The lease clock, each required to be 0: a lease that reported HELD
	// or RENEWING after its local deadline, an effect started after it.
	HeldPastDeadline    int `json:"heldPastDeadline"`
	EffectsPastDeadline int `json:"effectsPastDeadline"`
	// Of which under leases shorter than 3 s.
	HeldPastDeadlineShort    int `json:"heldPastDeadlineShortTTL"`
	EffectsPastDeadlineShort int `json:"effectsPastDeadlineShortTTL"`
	// The settings swept: acquires whose TTL the client refused before
	// sending, and the TTLs drawn by band (TTLBands names them).
	TTLRefused int    `json:"ttlRefusedUpFront"`
	TTLDrawn   [5]int `json:"ttlDrawn"`

	// The downstream hop: jobs handed off by accepted writes and applied at
	// their target; stale and duplicate downstream effects must be 0.
	JobsHandedOff    int `json:"jobsHandedOff"`
	JobsApplied      int `json:"jobsApplied"`
	StaleDownstream  int `json:"staleDownstreamEffects"`
	DuplicateEffects int `json:"duplicateDownstreamEffects"`

	// AdapterInconsistent: rounds an adapter check ended (an answer its
	// store contradicts, a receipt query that errs). Required to be 0.
	AdapterInconsistent int `json:"adapterInconsistent"`

	// Store faults injected (object mode with StoreFaults): receipt-batch
	// PUTs failed, manifest PUTs that landed answered 412 and answered
	// with an error.
	StoreBatchFailed int `json:"storeBatchFailed,omitempty"`
	StoreLost412     int `json:"storeLost412,omitempty"`
	StoreLostError   int `json:"storeLostError,omitempty"`

	ProtectedCoveragePct float64 `json:"protectedCoveragePct"`
	WritesApplied        int     `json:"writesApplied"`
	WritesFenced         int     `json:"writesFenced"`

	HandoffP50Ms    int64 `json:"handoffP50Ms"`
	HandoffP99Ms    int64 `json:"handoffP99Ms"`
	HandoffBudgetMs int64 `json:"handoffBudgetMs"`
	Handoffs        int   `json:"handoffs"`
	// Handoffs across a partition between the next holder and the
	// registry, or after a restore: the outage's, not the handoff's; not
	// budgeted.
	HandoffsExcused     int     `json:"handoffsNotBudgeted"`
	HandoffExcusedP99Ms int64   `json:"handoffNotBudgetedP99Ms"`
	FirstWriteP99Ms     int64   `json:"firstWriteP99Ms"`
	UnknownEntered      int     `json:"unknownEntered"`
	Reconciles          int     `json:"mutationUnknownReconciles"`
	UnknownReconcileS   float64 `json:"unknownReconcileMaxS"`
	// UnknownAfterRestoreS: the longest of those resolved after a
	// restore in their round; reported, not budgeted.
	UnknownAfterRestoreS float64 `json:"unknownReconcileAfterRestoreMaxS"`
	UnknownUnresolved    int     `json:"unknownUnresolved"`
	// UnknownOpenAfterRestore: reconciles open at a round's end behind a
	// grant the restored registry issued to nobody; reported, not budgeted.
	UnknownOpenAfterRestore int `json:"unknownOpenAfterRestore"`

	RegressionAlarms    int `json:"regressionAlarms"`
	RegressionSuspected int `json:"regressionSuspectedAlarms"`
	RegressedGrants     int `json:"regressedGrants"`
	// RevivedGrants and ForgottenRenewals: the other ways a restored
	// registry went backwards (a grant said HELD again after a higher
	// fence or its end; a lease expired before its committed expiry).
	RevivedGrants     int `json:"revivedGrants"`
	ForgottenRenewals int `json:"forgottenRenewals"`
	// RegressionNotAlarmed: rounds where a re-issued fence gave the gate
	// proof of a regression and no alarm was raised. Required to be 0.
	RegressionNotAlarmed int `json:"regressionsNotAlarmed"`
	// SQL: the resources ran on gate/sqlgate over SQLite, not gate/memgate.
	SQL bool `json:"sql"`
	// Objects: the resources ran on gate/objgate (two gates, one
	// in-memory bucket), not gate/memgate.
	Objects bool `json:"objects,omitempty"`
	// PG: the resources ran on gate/pggate, the gate inside PostgreSQL.
	PG          bool `json:"pg,omitempty"`
	StoreFaults bool `json:"storeFaults,omitempty"` // the bucket failed PUTs (Config.StoreFaults)
	// ClientSawForgottenRequest: restarted workers whose journalled request
	// ID was answered with a different grant.
	ClientSawForgottenRequest int  `json:"clientSawForgottenRequest"`
	NaiveRecovery             bool `json:"naiveRecovery,omitempty"`
	NaiveRelease              bool `json:"naiveRelease,omitempty"`
	OperatorResumes           int  `json:"operatorResumes"`

	BeyondBound BeyondBound `json:"beyondBound"`

	Attacks  map[string][2]int `json:"attacks"` // kind → [sent, accepted]
	Outcomes map[string]int    `json:"outcomes"`

	Decisions       int     `json:"decisions"`
	Events          int     `json:"events"`
	EventLogDigest  string  `json:"eventLogDigest"`
	ElapsedS        float64 `json:"elapsedS"`
	RoundsPerSecond float64 `json:"roundsPerSecond"`

	Violations      []Violation `json:"violations"`
	ViolationsTotal int         `json:"violationsTotal"`
}

// BeyondBound reports what happened in rounds whose gate clock lagged the
// registry by more than the skew bound.
type BeyondBound struct {
	Rounds     int `json:"rounds"`
	Detected   int `json:"detected"`   // rounds where a gate saw a status issued beyond its bound in its future
	Slipped    int `json:"slipped"`    // writes accepted that the bound would have stopped (never below a higher fence)
	Undetected int `json:"undetected"` // of which in rounds nothing detected: violations
}

func newReport(cfg *Config, c *Counts, elapsed time.Duration) *Report {
	r := &Report{
		Rounds: c.Rounds, Seed: cfg.Seed, Round: cfg.Round, Unsafe: cfg.mode() == gate.ModeShadow,
		Faults: map[string]float64{}, SkewBeyondBound: cfg.SkewBeyondBound, Alg: string(cfg.Alg), StatusQuery: cfg.StatusQuery, SkewBoundMs: cfg.SkewBoundMs,
		StaleAccepted: c.StaleAccepted, StaleNotHolder: c.StaleNotHolder, StaleAfterHigherFence: c.StaleAfterHigherFence,
		ForgedAccepted: c.ForgedAccepted, HighestFencePolluted: c.HighestFencePolluted,
		SegmentSkipAccepted: c.SegmentSkipAccepted, RegressionAccepted: c.RegressionAccepted, LostUpdates: c.LostUpdates, FenceReusedByRegistry: c.FenceReusedByRegistry,
		SpuriousPauses: c.SpuriousPauses, BlockedHandoffs: c.BlockedHandoffs, GhostWaiters: c.GhostWaiters, UnusableGrants: c.UnusableGrants,
		HeldPastDeadline: c.HeldPastDeadline, EffectsPastDeadline: c.EffectsPastDeadline, TTLRefused: c.TTLRefused, TTLDrawn: c.TTLDrawn,
		HeldPastDeadlineShort: c.HeldPastDeadlineShort, EffectsPastDeadlineShort: c.EffectsPastDeadlineShort,
		JobsHandedOff: c.JobsHandedOff, JobsApplied: c.JobsApplied, StaleDownstream: c.StaleDownstream, DuplicateEffects: c.DuplicateEffects,
		AdapterInconsistent: c.AdapterInconsistent, StoreBatchFailed: c.StoreBatchFailed, StoreLost412: c.StoreLost412, StoreLostError: c.StoreLostError,
		RegressionSuspected: c.RegressionSuspected, SQL: cfg.SQL, Objects: cfg.Objects, PG: cfg.PG, StoreFaults: cfg.StoreFaults,
		WritesApplied: c.Applied, WritesFenced: c.Fenced, ProtectedCoveragePct: 100,
		HandoffBudgetMs: cfg.HandoffBudgetMs, Handoffs: len(c.HandoffMs),
		HandoffP50Ms: percentile(c.HandoffMs, 50), HandoffP99Ms: percentile(c.HandoffMs, 99),
		HandoffsExcused: len(c.HandoffExcusedMs), HandoffExcusedP99Ms: percentile(c.HandoffExcusedMs, 99),
		FirstWriteP99Ms: percentile(c.FirstWriteMs, 99),
		UnknownEntered:  c.UnknownEntered, Reconciles: c.Reconciles,
		UnknownReconcileS: float64(c.UnknownMaxMs) / 1000, UnknownUnresolved: c.UnknownUnresolved,
		UnknownAfterRestoreS: float64(c.UnknownAfterRestoreMaxMs) / 1000, UnknownOpenAfterRestore: c.UnknownOpenAfterRestore,
		RegressionAlarms: c.RegressionAlarms, RegressedGrants: c.RegressedGrants, RevivedGrants: c.RevivedGrants, ForgottenRenewals: c.ForgottenRenewals, RegressionNotAlarmed: c.RegressionNotAlarmed, ClientSawForgottenRequest: c.ClientSawForgottenRequest, NaiveRecovery: cfg.NaiveRecovery, NaiveRelease: cfg.NaiveRelease, OperatorResumes: c.OperatorResumes,
		BeyondBound: BeyondBound{c.BeyondBoundRounds, c.BeyondBoundDetected, c.SlippedBeyondBound, c.SlippedUndetected},
		Attacks:     map[string][2]int{}, Outcomes: map[string]int{},
		Decisions: c.Decisions, Events: c.Events, EventLogDigest: hex16(c.Digest),
		ElapsedS:   elapsed.Seconds(),
		Violations: c.Violations, ViolationsTotal: c.ViolationsTotal,
	}
	if n := cfg.Negative; n != nil && !n.Shadow {
		r.Broken = n.Name
	}
	if elapsed > 0 {
		r.RoundsPerSecond = float64(c.Rounds) / elapsed.Seconds()
	}
	if c.Applied > 0 {
		r.ProtectedCoveragePct = 100 * float64(c.Fenced) / float64(c.Applied)
	}
	for f, rate := range cfg.Rates {
		if rate > 0 {
			r.Faults[Fault(f).String()] = rate
		}
	}
	for i, n := range c.AttacksSent {
		if n > 0 {
			r.Attacks[attackKind(i).String()] = [2]int{n, c.ForgedByKind[i]}
		}
	}
	for i, n := range c.Outcomes {
		if n > 0 {
			r.Outcomes[string(gate.Outcomes[i])] = n
		}
	}
	r.runGates(cfg)
	if r.Violations == nil {
		r.Violations = []Violation{}
	}
	return r
}

// runGates adds the run-level gates (coverage, handoff, reconcile) to the
// violations.
func (r *Report) runGates(cfg *Config) {
	add := func(kind, format string, args ...any) {
		r.ViolationsTotal++
		r.Violations = append(r.Violations, Violation{Seed: r.Seed, Kind: kind, Detail: fmt.Sprintf(format, args...),
			Repro: fmt.Sprintf("fencegate sim --seed %d --rounds %d --faults %s", r.Seed, r.Rounds, FaultsString(cfg.Rates))})
	}
	if r.ProtectedCoveragePct < 100 {
		add("coverage", "%.2f%% of applied writes were authenticated and fence-checked (%d of %d)", r.ProtectedCoveragePct, r.WritesFenced, r.WritesApplied)
	}
	if r.HandoffP99Ms > r.HandoffBudgetMs {
		add("handoff-budget", "handoff p99 %d ms over the %d ms budget", r.HandoffP99Ms, r.HandoffBudgetMs)
	}
	if r.UnknownReconcileS > UnknownReconcileBudgetS {
		add("unknown-reconcile", "an UNKNOWN took %.0f s to reconcile, budget %d s", r.UnknownReconcileS, UnknownReconcileBudgetS)
	}
}

// OK reports whether the run found no violation.
func (r *Report) OK() bool { return r.ViolationsTotal == 0 }

func percentile(xs []int64, p int) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}

// FaultsString renders rates as a --faults value.
func FaultsString(rates [faultCount]float64) string {
	var parts []string
	for f, r := range rates {
		if r > 0 {
			parts = append(parts, faultNames[f]+"="+strconv.FormatFloat(r, 'g', -1, 64))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// WriteText prints the report for a person.
func (r *Report) WriteText(w io.Writer) {
	mode := "fenced (grant authentication + fence check at the resource)"
	if r.Unsafe {
		mode = "UNSAFE negative control: lease-only, no fence check at the resource"
	} else if r.Broken != "" {
		mode = "protection deliberately broken: " + r.Broken
	}
	resource := "gate/memgate"
	switch {
	case r.SQL:
		resource = "gate/sqlgate on SQLite"
	case r.PG:
		resource = "gate/pggate inside PostgreSQL"
	case r.Objects && r.StoreFaults:
		resource = "gate/objgate (two gates, one bucket failing PUTs)"
	case r.Objects:
		resource = "gate/objgate (two gates, one bucket)"
	}
	fmt.Fprintf(w, "fencegate sim: %d rounds, seed %d, %s proofs, resources on %s, %s\n", r.Rounds, r.Seed, r.Alg, resource, mode)
	fmt.Fprintf(w, "  faults: %s\n\n", faultsLine(r.Faults))
	row := func(name string, v any, note string) { fmt.Fprintf(w, "  %-40s %14v  %s\n", name, v, note) }
	zero := func(n int) string {
		if n == 0 {
			return "ok"
		}
		return "VIOLATION"
	}
	row("stale writes accepted", r.StaleAccepted, zero(r.StaleAccepted))
	row("  not the holder at acceptance", r.StaleNotHolder, "")
	row("  below a fence already accepted", r.StaleAfterHigherFence, "")
	row("forged/tampered/cross/revoked accepted", r.ForgedAccepted, zero(r.ForgedAccepted))
	row("highestFence changed by a rejection", r.HighestFencePolluted, zero(r.HighestFencePolluted))
	row("segment-skip accepts", r.SegmentSkipAccepted, zero(r.SegmentSkipAccepted))
	row("accepts after fence regression", r.RegressionAccepted, zero(r.RegressionAccepted))
	row("commits that lost an update", r.LostUpdates, zero(r.LostUpdates))
	row("fences reused within one store history", r.FenceReusedByRegistry, zero(r.FenceReusedByRegistry))
	row("spurious pauses", r.SpuriousPauses, zero(r.SpuriousPauses))
	row("blocked handoffs", r.BlockedHandoffs, zero(r.BlockedHandoffs))
	row("ghost waiters", r.GhostWaiters, zero(r.GhostWaiters))
	row("unusable grants", r.UnusableGrants, zero(r.UnusableGrants))
	row("regressions not alarmed", r.RegressionNotAlarmed, zero(r.RegressionNotAlarmed))
	row("leases HELD past their local deadline", r.HeldPastDeadline, fmt.Sprintf("%s; %d with a TTL below 3 s", zero(r.HeldPastDeadline), r.HeldPastDeadlineShort))
	row("effects started past the local deadline", r.EffectsPastDeadline, fmt.Sprintf("%s; %d with a TTL below 3 s", zero(r.EffectsPastDeadline), r.EffectsPastDeadlineShort))
	row("stale downstream effects", r.StaleDownstream, zero(r.StaleDownstream))
	row("duplicate downstream effects", r.DuplicateEffects, fmt.Sprintf("%s; %d jobs handed off, %d applied at their target", zero(r.DuplicateEffects), r.JobsHandedOff, r.JobsApplied))
	row("adapter inconsistencies", r.AdapterInconsistent, zero(r.AdapterInconsistent))
	if r.StoreFaults {
		row("store faults injected", r.StoreBatchFailed+r.StoreLost412+r.StoreLostError,
			fmt.Sprintf("%d batch PUTs failed; %d landed manifest PUTs answered 412, %d an error", r.StoreBatchFailed, r.StoreLost412, r.StoreLostError))
	}
	var bands []string
	for i, n := range r.TTLDrawn {
		bands = append(bands, fmt.Sprintf("%s %d", TTLBands[i], n))
	}
	row("lease TTLs drawn", sum(r.TTLDrawn[:]), fmt.Sprintf("%s; %d refused before sending (below the client's minimum)", strings.Join(bands, ", "), r.TTLRefused))
	row("protected-mutation coverage", fmt.Sprintf("%.2f%%", r.ProtectedCoveragePct), fmt.Sprintf("%d of %d applied writes", r.WritesFenced, r.WritesApplied))
	row("handoff p50 / p99", fmt.Sprintf("%d / %d ms", r.HandoffP50Ms, r.HandoffP99Ms), fmt.Sprintf("budget %d ms, %d handoffs; first write p99 %d ms; %d across a partition or restore (not budgeted), p99 %d ms",
		r.HandoffBudgetMs, r.Handoffs, r.FirstWriteP99Ms, r.HandoffsExcused, r.HandoffExcusedP99Ms))
	row("UNKNOWN reconcile max", fmt.Sprintf("%.1f s", r.UnknownReconcileS), fmt.Sprintf("budget %d s; %d entered, %d reconciles, %d unresolved; after a restore (not budgeted) %.1f s, %d open at a round's end behind a grant issued to nobody",
		UnknownReconcileBudgetS, r.UnknownEntered, r.Reconciles, r.UnknownUnresolved, r.UnknownAfterRestoreS, r.UnknownOpenAfterRestore))
	row("fence regressions alarmed", r.RegressionAlarms, fmt.Sprintf("%d grants re-issued at an old fence; %d operator resumes", r.RegressedGrants, r.OperatorResumes))
	row("  suspected (alarm, no pause)", r.RegressionSuspected, "a lower fence whose HELD proof was within the skew bound of the highest grant")
	row("  clients that saw a forgotten request", r.ClientSawForgottenRequest, "journalled request ID answered with another grant; operation abandoned")
	row("  registry went back otherwise", r.RevivedGrants+r.ForgottenRenewals,
		fmt.Sprintf("%d grants said HELD again after a higher fence or their end, %d renewals forgotten", r.RevivedGrants, r.ForgottenRenewals))
	if len(r.Attacks) > 0 {
		var parts []string
		for _, n := range attackNames {
			if a, ok := r.Attacks[n]; ok {
				parts = append(parts, fmt.Sprintf("%s %d/%d", n, a[1], a[0]))
			}
		}
		fmt.Fprintf(w, "  adversary (accepted/sent): %s\n", strings.Join(parts, ", "))
	}
	if r.SkewBeyondBound {
		b := r.BeyondBound
		fmt.Fprintf(w, "\n  CLOCK BOUND EXCEEDED in %d rounds (gate clock lagging the registry by more than %d ms):\n", b.Rounds, r.SkewBoundMs)
		fmt.Fprintf(w, "    detected by the gate-side skew monitor in %d rounds\n", b.Detected)
		fmt.Fprintf(w, "    %d writes accepted from a grant no longer the holder (the fence still ordered them: none below a higher fence)\n", b.Slipped)
		fmt.Fprintf(w, "    %d of them in rounds where nothing detected the lag\n", b.Undetected)
	}
	fmt.Fprintf(w, "\n  %d decisions, %d events, %.1f s, %.0f rounds/s, event-log digest %s\n", r.Decisions, r.Events, r.ElapsedS, r.RoundsPerSecond, r.EventLogDigest)
	if r.OK() {
		fmt.Fprintln(w, "\nresult: PASS (no violations)")
		return
	}
	fmt.Fprintf(w, "\nresult: FAIL, %d violations; first ones (each replays alone):\n", r.ViolationsTotal)
	for i, v := range r.Violations {
		if i == 10 {
			break
		}
		fmt.Fprintf(w, "  round %d [%s] %s\n    seed %d: %s\n", v.Round, v.Kind, v.Detail, v.Seed, v.Repro)
	}
}

func faultsLine(m map[string]float64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, n := range faultNames {
		if r, ok := m[n]; ok {
			parts = append(parts, fmt.Sprintf("%s %.2g", n, r))
		}
	}
	return strings.Join(parts, ", ")
}

func hex16(d uint64) string { return fmt.Sprintf("%016x", d) }

// TTLBands names the bands of Report.TTLDrawn.
var TTLBands = [5]string{"at the client's minimum", "below 3 s", "3-15 s", "15-60 s", "60 s-10 min"}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
