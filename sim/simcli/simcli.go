// Package simcli is the simulator's command line, shared by its two
// homes: `fencegate sim`, in the binary, which runs the product as it
// ships, and sim/cmd/simbreak, which runs the negative controls
// (sim/negative) and which the binary does not link. It holds the flags
// both take, the sim.Config they make, the progress bar and the report.
package simcli

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/pflag"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/sim"
)

// Options are the values of the flags Bind adds.
type Options struct {
	rounds, round, parallel, semRounds, lsRounds  int
	rwRounds                                      int
	seed                                          uint64
	faults, alg                                   string
	beyond, trace, asJSON, query                  bool
	naiveRelease, naive, sqlMode, objMode, pgMode bool
	pgDSN                                         string
	storeFaults                                   bool
	bound, budget                                 int64
}

// Bind adds the simulator's flags to fs, their values kept in o.
func (o *Options) Bind(fs *pflag.FlagSet) {
	fs.IntVar(&o.rounds, "rounds", 10000, "number of rounds")
	fs.Uint64Var(&o.seed, "seed", 0, "run seed (default: random, printed)")
	fs.StringVar(&o.faults, "faults", "all", "faults to inject: all, none, or a comma-separated list of NAME or NAME=RATE")
	fs.BoolVar(&o.sqlMode, "sql", false, "run the resources on gate/sqlgate over in-memory SQLite instead of gate/memgate (same decisions, slower)")
	fs.BoolVar(&o.objMode, "obj", false, "run the resources on gate/objgate: two gates with their own manifest caches in front of one in-memory bucket (same decisions, slower)")
	fs.BoolVar(&o.pgMode, "pg", false, "run the resources on gate/pggate, the gate inside PostgreSQL, each goroutine on a fresh database of --pg-dsn's server (same decisions, slower; needs a superuser)")
	fs.StringVar(&o.pgDSN, "pg-dsn", "", "with --pg: the PostgreSQL server (default: the PG* environment variables, as psql)")
	fs.BoolVar(&o.storeFaults, "store-faults", false, "with --obj: the bucket fails receipt-batch PUTs and loses the answers of manifest PUTs that landed")
	fs.BoolVar(&o.beyond, "skew-beyond-bound", false, "give the gate a clock lagging beyond the skew bound in half the rounds; report the effect")
	fs.IntVar(&o.round, "round", 0, "replay only this round (1-based) of the run")
	fs.BoolVar(&o.trace, "trace", false, "with --round: print every event of the round")
	fs.BoolVar(&o.asJSON, "json", false, "print the report as one JSON object")
	fs.IntVar(&o.parallel, "parallel", 0, "goroutines running rounds; 0: one per core (results do not depend on it)")
	fs.Int64Var(&o.bound, "skew-bound-ms", 0, "configured clock-skew bound of registry and gate in ms (default 500)")
	fs.BoolVar(&o.query, "status-query", false, "the gate asks the registry for each grant's state (linearizable query) instead of trusting status proofs")
	fs.BoolVar(&o.naiveRelease, "naive-release", false, "a client releases at once after a non-final rejection, copies of its writes still in flight (exposes proofs outliving a release)")
	fs.BoolVar(&o.naive, "naive-recovery", false, "a restarted client resumes its operation under whatever grant its request ID returns (exposes the gate's equal-fence gap)")
	fs.StringVar(&o.alg, "alg", "hmac-sha256", "proof algorithm of every key: hmac-sha256, or ed25519 (the production default; same decisions, rounds about 3x slower)")
	fs.Int64Var(&o.budget, "handoff-budget-ms", 0, "handoff p99 budget in ms (default 3000)")
	fs.IntVar(&o.semRounds, "semaphore-rounds", 0, "then run this many semaphore rounds (counting semaphores beside plain locks, frozen permit holders; text report only)")
	fs.IntVar(&o.lsRounds, "lockset-rounds", 0, "then run this many lock-set rounds (all-or-nothing lock sets beside plain locks on the same resources, frozen and crashed holders; text report only)")
	fs.IntVar(&o.rwRounds, "rwlock-rounds", 0, "then run this many read/write lock rounds (readers, writers and downgrades beside a plain lock, frozen and dead holders; text report only)")
}

// UsageError is a mistake in the command line: the command should exit
// with status 2 and print its message.
type UsageError struct{ Err error }

// Error returns the mistake's message.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the mistake.
func (e *UsageError) Unwrap() error { return e.Err }

// ErrViolations is wrapped by Run's error when the run found violations
// (exit status 1): for a negative control, the expected outcome.
var ErrViolations = errors.New("violations")

// Run runs the simulator as o says, with negative control n (nil for
// none), and writes the report to stdout. Its error is a *UsageError, an
// error wrapping ErrViolations, or nil.
func Run(o *Options, n *sim.Negative, stdout io.Writer) error {
	cfg, err := o.config(n)
	if err != nil {
		return &UsageError{err}
	}
	if o.trace {
		cfg.Trace = stdout
	}
	if !o.asJSON {
		fmt.Fprintf(stdout, "seed %d (replay with --seed %d)\n", cfg.Seed, cfg.Seed)
	}
	bar := newProgress(stdout, cfg.Rounds, o.asJSON || o.trace || o.round > 0)
	cfg.Progress = bar.update
	rep, err := sim.Run(cfg)
	bar.clear()
	if err != nil {
		return &UsageError{err}
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		rep.WriteText(stdout)
	}
	if !rep.OK() {
		return fmt.Errorf("%d %w (seed %d)", rep.ViolationsTotal, ErrViolations, rep.Seed)
	}
	if err := runSemaphores(o, cfg.Seed, n, stdout); err != nil {
		return err
	}
	if err := runLockSets(o, cfg.Seed, n, stdout); err != nil {
		return err
	}
	return runRWLocks(o, cfg.Seed, n, stdout)
}

// runRWLocks runs --rwlock-rounds and reports them in one line, then
// each violation.
func runRWLocks(o *Options, seed uint64, n *sim.Negative, stdout io.Writer) error {
	if o.rwRounds <= 0 || o.round > 0 {
		return nil
	}
	c, err := sim.RunRWLocksWith(o.setOptions(seed, o.rwRounds, n))
	if err != nil {
		return &UsageError{err}
	}
	if !o.asJSON {
		fmt.Fprintf(stdout, "read/write lock rounds %d: %d reads (%d shared), %d writes (%d downgraded), %d plain locks, %d frozen and %d dead holders, %d renewed, %d abandoned, %d dead waiting, %d ran out (longest answer after the lock was clear %d ms), %d refused, %d writes (%d accepted), %d reader writes (%d READ_GRANT); %s; "+
			"writer beside %d, reader mutation %d, stale accepted %d, downgrade gap %d, reader early %d, reader past TTL %d, jumped %d, stuck %d, unended %d; digest %016x\n",
			c.Rounds, c.Reads, c.Shared, c.Writes, c.Downgrades, c.Plain, c.Frozen, c.Crashed, c.Renewed, c.Abandoned, c.Vanished, c.RanOut, c.ClearMsMax, c.Refused, c.GateWrites, c.Accepted, c.ReaderWrites, c.ReadGrantRefused, c.Net.String(),
			c.WriterBeside, c.ReaderMutation, c.Stale, c.DowngradeGap, c.ReaderEarly, c.ReaderPastTTL, c.Jumped, c.Stuck, c.Unended, c.Digest)
		for _, v := range c.Violations {
			fmt.Fprintf(stdout, "  %s round %d: %s (%s)\n", v.Kind, v.Round, v.Detail, v.Repro)
		}
	}
	if !c.OK() {
		return fmt.Errorf("%d read/write lock %w (seed %d)", c.Bad(), ErrViolations, seed)
	}
	return nil
}

// runSemaphores runs --semaphore-rounds and reports them in one line,
// then each violation.
func runSemaphores(o *Options, seed uint64, n *sim.Negative, stdout io.Writer) error {
	if o.semRounds <= 0 || o.round > 0 {
		return nil
	}
	c, err := sim.RunSemaphoresWith(o.setOptions(seed, o.semRounds, n))
	if err != nil {
		return &UsageError{err}
	}
	if !o.asJSON {
		fmt.Fprintf(stdout, "semaphore rounds %d: %d grants (%d permits), %d frozen holders, %d given up, %d writes, %d accepted; %s; over N %d, slot held twice %d, stale accepted %d, unended %d; digest %016x\n",
			c.Rounds, c.Grants, c.Permits, c.Frozen, c.GaveUp, c.Writes, c.Accepted, c.Net.String(), c.SemOverN, c.SemSlotTwice, c.SemStale, c.Unended, c.Digest)
		for _, v := range c.Violations {
			fmt.Fprintf(stdout, "  %s round %d: %s\n", v.Kind, v.Round, v.Detail)
		}
	}
	if !c.OK() {
		return fmt.Errorf("%d semaphore %w (seed %d)", c.Bad(), ErrViolations, seed)
	}
	return nil
}

// runLockSets runs --lockset-rounds and reports them in one line, then
// each violation.
func runLockSets(o *Options, seed uint64, n *sim.Negative, stdout io.Writer) error {
	if o.lsRounds <= 0 || o.round > 0 {
		return nil
	}
	c, err := sim.RunLockSetsWith(o.setOptions(seed, o.lsRounds, n))
	if err != nil {
		return &UsageError{err}
	}
	if !o.asJSON {
		fmt.Fprintf(stdout, "lock-set rounds %d: %d sets (%d member grants), %d plain locks, %d frozen and %d crashed holders, %d renewed, %d abandoned, %d ran out (longest answer after every member was clear %d ms), %d refused, %d ended before their answer, %d given up, %d writes, %d accepted; %s; "+
			"partial set %d, waiter holding %d, member held twice %d, stale accepted %d, stuck %d, deadlocked %d, unended %d; digest %016x\n",
			c.Rounds, c.Sets, c.MemberGrants, c.Plain, c.Frozen, c.Crashed, c.Renewed, c.Abandoned, c.RanOut, c.ClearMsMax, c.Refused, c.Ended, c.GaveUp, c.Writes, c.Accepted, c.Net.String(),
			c.SetPartial, c.SetWaiterHolds, c.MemberTwice, c.MemberStale, c.Stuck, c.Deadlocks, c.Unended, c.Digest)
		for _, v := range c.Violations {
			fmt.Fprintf(stdout, "  %s round %d: %s (%s)\n", v.Kind, v.Round, v.Detail, v.Repro)
		}
	}
	if !c.OK() {
		return fmt.Errorf("%d lock-set %w (seed %d)", c.Bad(), ErrViolations, seed)
	}
	return nil
}

// setOptions are the lock-set, semaphore or read/write lock rounds' options: --pg adds
// gate/pggate to the gates they draw.
func (o *Options) setOptions(seed uint64, rounds int, n *sim.Negative) sim.SetOptions {
	return sim.SetOptions{Seed: seed, Rounds: rounds, Parallel: o.parallel, Negative: n, PG: o.pgMode, PGDSN: o.pgDSN}
}

// config is the sim.Config the flags make, with negative control n.
func (o *Options) config(n *sim.Negative) (sim.Config, error) {
	rates, err := sim.ParseFaults(o.faults)
	if err != nil {
		return sim.Config{}, err
	}
	if o.trace && o.round == 0 {
		return sim.Config{}, errors.New("--trace needs --round")
	}
	seed := o.seed
	if seed == 0 {
		var buf [8]byte
		if _, err := rand.Read(buf[:]); err != nil {
			return sim.Config{}, err
		}
		seed = binary.LittleEndian.Uint64(buf[:]) >> 1 // keeps it readable as a positive int64 too
	}
	cfg := sim.Config{Rounds: o.rounds, Seed: seed, Rates: rates, Negative: n}
	cfg.Parallel = o.parallel
	if cfg.Parallel <= 0 {
		cfg.Parallel = runtime.GOMAXPROCS(0)
	}
	cfg.SkewBeyondBound, cfg.Round, cfg.HandoffBudgetMs = o.beyond, o.round, o.budget
	cfg.Alg, cfg.NaiveRecovery, cfg.StatusQuery, cfg.SkewBoundMs = grant.Alg(o.alg), o.naive, o.query, o.bound
	cfg.NaiveRelease, cfg.SQL, cfg.Objects, cfg.StoreFaults = o.naiveRelease, o.sqlMode, o.objMode, o.storeFaults
	cfg.PG, cfg.PGDSN = o.pgMode, o.pgDSN
	return cfg, nil
}

// progress draws a bar on a terminal, and nothing anywhere else.
type progress struct {
	w     io.Writer
	total int
	on    bool
}

func newProgress(w io.Writer, total int, quiet bool) *progress {
	p := &progress{w: w, total: total}
	if f, ok := w.(*os.File); ok && !quiet {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.on = true
		}
	}
	return p
}

func (p *progress) update(done int) {
	if !p.on {
		return
	}
	const width = 40
	n := done * width / max(p.total, 1)
	fmt.Fprintf(p.w, "\r  [%s%s] %d/%d rounds", strings.Repeat("#", n), strings.Repeat(".", width-n), done, p.total)
}

func (p *progress) clear() {
	if p.on {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 72))
	}
}
