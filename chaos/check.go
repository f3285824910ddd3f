package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencegate/fencegate/chaos/record"
)

// checkTimeout bounds porcupine's search over one run's history.
const checkTimeout = 3 * time.Minute

// lockDelayMs is the registry's lock-delay in the runs (serve's default).
const lockDelayMs = 1000

// Report is one run's figures and verdicts.
type Report struct {
	Seed   uint64
	Mutant bool
	// Engine is the store's backend (BackendEtcd, BackendZooKeeper).
	Engine string
	// RestoreExpected is true when the run was to restore its store from
	// a snapshot (a Restorer backend, not the mutant).
	RestoreExpected bool
	// FaultsMissing are the kinds the run had to inject and did not
	// (zkRequiredFaults on ZooKeeper).
	FaultsMissing []string
	// Supervised counts the serve replicas started again after they
	// exited by themselves (Env.supervise).
	Supervised int
	Duration   time.Duration // under load, faults included
	// Verdict is porcupine's: Ok, Illegal or Unknown (timed out).
	Verdict porcupine.CheckResult
	// Visualization is the HTML porcupine wrote for an Illegal history.
	Visualization string
	// Evidence lists, for an Illegal verdict, the operations around the
	// first one porcupine could not place.
	Evidence []string
	// Undecided names, for an Unknown verdict, each partition porcupine
	// did not decide within checkTimeout, and its size.
	Undecided []string
	// EngineForks names each fork of the store the members' logs show
	// (zkForks): printed always, and named among the failures of a run
	// that failed.
	EngineForks []string
	Operations  int           // operations porcupine checked
	CheckTime   time.Duration // porcupine's time
	// Sem is the semaphore model's check (model_semaphore.go) over the
	// history's counting semaphores: at most N holders, one holder per
	// slot, a lease on one slot, N recorded, each slot's fences rising
	// and its gate accepting as an exclusive lock's. Its verdict is
	// folded into Verdict (the worst of the models); zero when the run had
	// no semaphore.
	Sem SemCheck
	// RW is the read/write model's check (model_rwlock.go) over the
	// history's read/write locks: a writer alone, readers sharing, each
	// holder its own lease, fences (a writer's rising, a reader's the last
	// writer's), downgrade as one write (the write lease ends, a new
	// reader's lease with its fence, no writer between, other readers
	// after the write lease's statements), and the gate refusing every
	// reader's grant (READ_GRANT). Folded into Verdict; zero when the run
	// had no read/write lock.
	RW RWCheck
	// ExclusiveVerdict is the exclusive model's alone (resources and
	// semaphore slots), before the others are folded into Verdict.
	ExclusiveVerdict porcupine.CheckResult
	Calls            map[string]int // registry calls by kind/result, writes and decisions by outcome
	Faults           map[string]int // injected, by kind
	Counts           Counts
	Repairs          int
	Resumes          int
}

// SemCheck is the semaphore model's verdict over a run's history.
type SemCheck struct {
	Semaphores    []string
	Verdict       porcupine.CheckResult
	Operations    int
	CheckTime     time.Duration
	Visualization string
	Evidence      []string
	Undecided     []string
}

// RWCheck is the read/write model's verdict over a run's history.
type RWCheck struct {
	Locks []string
	modelCheck
}

// worse is the worse of two verdicts: Illegal, then Unknown, then Ok.
func worse(a, b porcupine.CheckResult) porcupine.CheckResult {
	for _, v := range []porcupine.CheckResult{porcupine.Illegal, porcupine.Unknown} {
		if a == v || b == v {
			return v
		}
	}
	return porcupine.Ok
}

// Failures lists what makes a normal run fail: a verdict other than Ok,
// a violation count, or faults that were meant to happen and did not.
// strictPauses is false while the gate still runs the old regression
// rule, whose pauses in normal operation this suite is expected to see.
func (r *Report) Failures(strictPauses bool) []string {
	var out []string
	switch r.Verdict {
	case porcupine.Ok:
	case porcupine.Unknown:
		out = append(out, fmt.Sprintf("porcupine: %s: no verdict within %s, which fails the run (undecided: %s)",
			r.Verdict, checkTimeout, strings.Join(r.Undecided, "; ")))
	default:
		out = append(out, fmt.Sprintf("porcupine: %s", r.Verdict))
	}
	for _, v := range r.Counts.Violations() {
		if strictPauses || !strings.HasPrefix(v, "spurious pauses") {
			out = append(out, v)
		}
	}
	if len(out) > 0 {
		// The failure happened on a store that forked: said, so it is
		// read as the engine's fork the registry did not withstand.
		for _, f := range r.EngineForks {
			out = append(out, "on a store that forked: "+f)
		}
	}
	for _, k := range r.FaultsMissing {
		out = append(out, fmt.Sprintf("no %s fault was injected", k))
	}
	if !r.RestoreExpected {
		return out
	}
	if r.Faults[FaultRestore] == 0 {
		out = append(out, "no snapshot restore happened")
	}
	if r.Counts.ExpectedPauses == 0 && r.Counts.RestoresForgotNothing == 0 {
		out = append(out, "the restore ended in no FENCE_REGRESSION pause")
	}
	return out
}

// Check reads a finished run's histories and database and checks them.
func Check(ctx context.Context, cfg Config, db *sql.DB, eventsDir string) (*Report, error) {
	rep, err := CheckHistory(eventsDir, cfg.StoreDir, cfg.Seed, cfg.Mutant, cfg.Dir)
	if err != nil {
		return nil, err
	}
	effects, err := loadEffects(ctx, db)
	if err != nil {
		return nil, err
	}
	receipts := map[segKey]string{}
	if !cfg.Mutant {
		if receipts, err = loadReceipts(ctx, db); err != nil {
			return nil, err
		}
	}
	countEffects(effects, receipts, cfg.Mutant, rep.RW.Locks, &rep.Counts)
	return rep, nil
}

// CheckHistory checks a run's recorded history alone, with no database:
// porcupine over the model, and the counts the history shows (the
// registry's answers, the gates' pauses). storeDir, when not "", holds
// the store members' logs: a ZooKeeper member's sync that lost answers
// of the history is a regression of the store (zkLosses). A kept run is
// replayed through it (cmd/chaoscheck). An Illegal verdict's
// visualization is written to visDir.
func CheckHistory(eventsDir, storeDir string, seed uint64, mutant bool, visDir string) (*Report, error) {
	h, err := LoadHistory(eventsDir)
	if err != nil {
		return nil, err
	}
	losses, err := zkLosses(storeDir, h)
	if err != nil {
		return nil, err
	}
	h.add(losses...)
	forks, err := zkForks(storeDir)
	if err != nil {
		return nil, err
	}
	rep := &Report{Seed: seed, Mutant: mutant, Calls: tally(h)}
	for _, f := range forks {
		rep.EngineForks = append(rep.EngineForks, f.String())
	}
	ops := h.Operations(h.Resources())
	rep.Operations = len(ops)
	model := modelFor(ops)
	t0 := time.Now()
	res, info := porcupine.CheckOperationsVerbose(model, ops, checkTimeout)
	rep.Verdict, rep.CheckTime = res, time.Since(t0)
	switch res {
	case porcupine.Illegal:
		rep.Visualization = filepath.Join(visDir, fmt.Sprintf("porcupine-seed%d.html", seed))
		if err := porcupine.VisualizePath(model, info, rep.Visualization); err != nil {
			return nil, err
		}
		rep.Evidence = evidence(model, ops)
	case porcupine.Unknown:
		rep.Undecided = undecided(model, ops)
	}
	rep.ExclusiveVerdict = res
	if err := checkSemaphores(h, seed, visDir, rep); err != nil {
		return nil, err
	}
	if err := checkRWLocks(h, seed, visDir, rep); err != nil {
		return nil, err
	}
	countRegistry(h, &rep.Counts)
	countPauses(h, &rep.Counts)
	for _, e := range h.Events {
		switch {
		case e.Kind == record.KindRepair:
			rep.Repairs++
		case e.Kind == record.KindResume && e.Result == record.ResultOK:
			rep.Resumes++
		}
	}
	return rep, nil
}

// checkSemaphores runs the semaphore model over h's semaphore
// operations into rep.Sem, and folds its verdict into rep.Verdict.
func checkSemaphores(h *History, seed uint64, visDir string, rep *Report) error {
	ops := h.SemaphoreOperations()
	if len(ops) == 0 {
		return nil
	}
	sc := &rep.Sem
	sc.Semaphores = h.Semaphores()
	mc, err := checkModel(semModelFor(ops), ops, fmt.Sprintf("porcupine-semaphore-seed%d.html", seed), visDir, semEvidence, semUndecided)
	if err != nil {
		return err
	}
	sc.Verdict, sc.Operations, sc.CheckTime, sc.Visualization, sc.Evidence, sc.Undecided = mc.Verdict, mc.Operations, mc.CheckTime, mc.Visualization, mc.Evidence, mc.Undecided
	rep.fold(mc)
	return nil
}

// checkRWLocks runs the read/write model over h's read/write lock
// operations into rep.RW, and folds its verdict into rep.Verdict.
func checkRWLocks(h *History, seed uint64, visDir string, rep *Report) error {
	ops := h.RWOperations()
	if len(ops) == 0 {
		return nil
	}
	mc, err := checkModel(rwModelFor(ops), ops, fmt.Sprintf("porcupine-rwlock-seed%d.html", seed), visDir, rwEvidence, rwUndecided)
	if err != nil {
		return err
	}
	rep.RW = RWCheck{Locks: h.RWLocks(), modelCheck: mc}
	rep.fold(mc)
	return nil
}

// modelCheck is one model's verdict over a run's history.
type modelCheck struct {
	Verdict       porcupine.CheckResult
	Operations    int
	CheckTime     time.Duration
	Visualization string
	Evidence      []string
	Undecided     []string
}

// checkModel checks ops against model: an Illegal verdict's
// visualization is written to visDir/visName and explained (evidence),
// an Unknown one's undecided partitions named.
func checkModel(model porcupine.Model, ops []porcupine.Operation, visName, visDir string,
	evidence, undecided func(porcupine.Model, []porcupine.Operation) []string) (modelCheck, error) {
	mc := modelCheck{Operations: len(ops)}
	t0 := time.Now()
	res, info := porcupine.CheckOperationsVerbose(model, ops, checkTimeout)
	mc.Verdict, mc.CheckTime = res, time.Since(t0)
	switch res {
	case porcupine.Illegal:
		mc.Visualization = filepath.Join(visDir, visName)
		if err := porcupine.VisualizePath(model, info, mc.Visualization); err != nil {
			return mc, err
		}
		mc.Evidence = evidence(model, ops)
	case porcupine.Unknown:
		mc.Undecided = undecided(model, ops)
	}
	return mc, nil
}

// fold makes rep's verdict the worse of its own and mc's.
func (rep *Report) fold(mc modelCheck) {
	rep.Verdict = worse(rep.Verdict, mc.Verdict)
	if rep.Visualization == "" {
		rep.Visualization = mc.Visualization
	}
	rep.Undecided = append(rep.Undecided, mc.Undecided...)
}

// tally counts registry answers by kind and result, and writes and gate
// decisions by outcome.
func tally(h *History) map[string]int {
	out := map[string]int{}
	for _, e := range h.Events {
		switch e.Kind {
		case record.KindFault, record.KindRepair, record.KindResume, record.KindRestore, record.KindRegression:
			continue
		}
		out[e.Kind+" "+e.Result]++
	}
	return out
}

// String prints the report, one figure per line.
func (r *Report) String() string {
	var b strings.Builder
	kind := "run"
	if r.Mutant {
		kind = "MUTANT run (fence check off)"
	}
	fmt.Fprintf(&b, "%s seed %d on %s: %s under load, porcupine %s over %d operations (%s)\n", kind, r.Seed, r.Engine, r.Duration.Round(time.Second), r.ExclusiveVerdict, r.Operations, r.CheckTime.Round(time.Millisecond))
	fmt.Fprintf(&b, "  faults:")
	for _, k := range sortedKeys(r.Faults) {
		fmt.Fprintf(&b, " %s=%d", k, r.Faults[k])
	}
	fmt.Fprintf(&b, "\n  counts: %+v\n  repairs %d, resumes %d, replicas restarted by the supervisor %d\n", r.Counts, r.Repairs, r.Resumes, r.Supervised)
	keys := sortedKeys(r.Calls)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-32s %d\n", k, r.Calls[k])
	}
	if s := r.Sem; s.Operations > 0 {
		fmt.Fprintf(&b, "  semaphores %v: porcupine %s over %d operations (%s)\n", s.Semaphores, s.Verdict, s.Operations, s.CheckTime.Round(time.Millisecond))
	}
	if s := r.RW; s.Operations > 0 {
		fmt.Fprintf(&b, "  read/write locks %v: porcupine %s over %d operations (%s)\n", s.Locks, s.Verdict, s.Operations, s.CheckTime.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "  verdict (the worst of the models): %s\n", r.Verdict)
	if r.Visualization != "" {
		fmt.Fprintf(&b, "  porcupine visualization: %s\n", r.Visualization)
	}
	if r.Sem.Visualization != "" {
		fmt.Fprintf(&b, "  porcupine visualization (semaphores): %s\n", r.Sem.Visualization)
	}
	for _, l := range r.Sem.Evidence {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	if r.RW.Visualization != "" {
		fmt.Fprintf(&b, "  porcupine visualization (read/write locks): %s\n", r.RW.Visualization)
	}
	for _, l := range r.RW.Evidence {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	for _, l := range r.EngineForks {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	for _, l := range r.Evidence {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	for _, l := range r.Undecided {
		fmt.Fprintf(&b, "  undecided: %s\n", l)
	}
	return b.String()
}

// Totals sums several reports' figures.
func Totals(rs []*Report) (ops int, faults map[string]int, verdicts map[string]int, counts Counts) {
	faults, verdicts = map[string]int{}, map[string]int{}
	for _, r := range rs {
		ops += r.Operations
		verdicts[string(r.Verdict)]++
		for k, v := range r.Faults {
			faults[k] += v
		}
		c := &counts
		c.StaleAccepts += r.Counts.StaleAccepts
		c.StaleAcceptsOnSlots += r.Counts.StaleAcceptsOnSlots
		c.StaleAcceptsOnRWLocks += r.Counts.StaleAcceptsOnRWLocks
		c.FenceReusedAtGate += r.Counts.FenceReusedAtGate
		c.FenceReusedByRegistry += r.Counts.FenceReusedByRegistry
		c.RequestIDTwoGrants += r.Counts.RequestIDTwoGrants
		c.ReceiptsWithoutEffect += r.Counts.ReceiptsWithoutEffect
		c.EffectsWithoutReceipt += r.Counts.EffectsWithoutReceipt
		c.SpuriousPauses += r.Counts.SpuriousPauses
		c.RestoresUndetected += r.Counts.RestoresUndetected
		c.ExpectedReissues += r.Counts.ExpectedReissues
		c.ExpectedPauses += r.Counts.ExpectedPauses
		c.StoreWentBack += r.Counts.StoreWentBack
		c.RestoresForgotNothing += r.Counts.RestoresForgotNothing
	}
	return ops, faults, verdicts, counts
}
