package main

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/sim"
	"github.com/spf13/cobra"
)

func init() { register(newSimCmd) }

const simLong = `Run the deterministic simulator: the real registry, client state machine
and gate decision under a fault matrix, with a checker that counts every
violation. One seed reproduces the whole run.

The full gate of the specification (15-30 s on two cores; about three
times longer with --alg ed25519, which gives the same decisions):
  fencegate sim --rounds 100000 --faults all
The negative control (lease-only protection; must report stale writes):
  fencegate sim --rounds 5000 --unsafe
A gate clock lagging beyond the skew bound, detected and reported:
  fencegate sim --rounds 20000 --skew-beyond-bound

faults: %s

Exit status 1 when any violation is found; each one prints the seed and
the command that replays its round.`

// simOptions are sim's flags.
type simOptions struct {
	rounds, round, parallel                       int
	seed                                          uint64
	faults, broken, alg                           string
	unsafe, beyond, trace, asJSON, query          bool
	naiveRelease, naive, sqlMode, objMode, pgMode bool
	pgDSN                                         string
	storeFaults                                   bool
	bound, budget                                 int64
}

func newSimCmd() *cobra.Command {
	o := &simOptions{}
	c := &cobra.Command{
		Use:   "sim",
		Short: "deterministic fault-injection simulation of registry, clients and gate, with a checker",
		Long:  fmt.Sprintf(simLong, strings.Join(sim.FaultNames(), ", ")),
		RunE:  func(c *cobra.Command, _ []string) error { return runSim(o, c.OutOrStdout()) },
	}
	fs := c.Flags()
	fs.IntVar(&o.rounds, "rounds", 10000, "number of rounds")
	fs.Uint64Var(&o.seed, "seed", 0, "run seed (default: random, printed)")
	fs.StringVar(&o.faults, "faults", "all", "faults to inject: all, none, or a comma-separated list of NAME or NAME=RATE")
	fs.BoolVar(&o.unsafe, "unsafe", false, "negative control: lease-only protection, no fence check at the resource")
	fs.StringVar(&o.broken, "break", "none", "disable one protection on purpose: "+strings.Join(sim.BreakNames()[1:], ", "))
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
	return c
}

func runSim(o *simOptions, stdout io.Writer) error {
	cfg, err := simConfig(o.rounds, o.seed, o.faults, o.broken, o.unsafe)
	if err != nil {
		return usagef("%v", err)
	}
	if o.parallel <= 0 {
		o.parallel = runtime.GOMAXPROCS(0)
	}
	cfg.SkewBeyondBound, cfg.Round, cfg.Parallel, cfg.HandoffBudgetMs = o.beyond, o.round, o.parallel, o.budget
	cfg.Alg, cfg.NaiveRecovery, cfg.StatusQuery, cfg.SkewBoundMs = grant.Alg(o.alg), o.naive, o.query, o.bound
	cfg.NaiveRelease, cfg.SQL, cfg.Objects, cfg.StoreFaults = o.naiveRelease, o.sqlMode, o.objMode, o.storeFaults
	cfg.PG, cfg.PGDSN = o.pgMode, o.pgDSN
	if o.trace {
		if o.round == 0 {
			return usagef("--trace needs --round")
		}
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
		return usagef("%v", err)
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
		return fmt.Errorf("%d violations (seed %d)", rep.ViolationsTotal, rep.Seed)
	}
	return nil
}

func simConfig(rounds int, seed uint64, faults, broken string, unsafe bool) (sim.Config, error) {
	rates, err := sim.ParseFaults(faults)
	if err != nil {
		return sim.Config{}, err
	}
	b, err := sim.ParseBreak(broken)
	if err != nil {
		return sim.Config{}, err
	}
	if unsafe {
		if b != sim.BreakNone && b != sim.BreakFence {
			return sim.Config{}, fmt.Errorf("--unsafe and --break %s are exclusive", broken)
		}
		b = sim.BreakFence
	}
	if seed == 0 {
		var buf [8]byte
		if _, err := rand.Read(buf[:]); err != nil {
			return sim.Config{}, err
		}
		seed = binary.LittleEndian.Uint64(buf[:]) >> 1 // keeps it readable as a positive int64 too
	}
	return sim.Config{Rounds: rounds, Seed: seed, Rates: rates, Break: b}, nil
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
