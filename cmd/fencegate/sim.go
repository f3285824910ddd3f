package main

import (
	"context"
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
)

func init() {
	register(command{name: "sim", summary: "deterministic fault-injection simulation of registry, clients and gate, with a checker", run: runSim})
}

const simUsage = `usage: fencegate sim [--rounds N] [--seed S] [--faults all|none|NAME[=RATE],...]
                    [--unsafe] [--skew-beyond-bound] [--alg hmac-sha256|ed25519]
                    [--round K [--trace]] [--json]

The full gate of the specification (15-30 s on two cores; about three
times longer with --alg ed25519, which gives the same decisions):
  fencegate sim --rounds 100000 --faults all
The negative control (lease-only protection; must report stale writes):
  fencegate sim --rounds 5000 --unsafe
A gate clock lagging beyond the skew bound, detected and reported:
  fencegate sim --rounds 20000 --skew-beyond-bound

faults: ` + "%s" + `
Exit status 1 when any violation is found; each one prints the seed and
the command that replays its round.`

func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sim", stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, simUsage+"\n\nflags:\n", strings.Join(sim.FaultNames(), ", "))
		fs.PrintDefaults()
	}
	rounds := fs.Int("rounds", 10000, "number of rounds")
	seed := fs.Uint64("seed", 0, "run seed (default: random, printed)")
	faults := fs.String("faults", "all", "faults to inject: all, none, or a comma-separated list of NAME or NAME=RATE")
	unsafe := fs.Bool("unsafe", false, "negative control: lease-only protection, no fence check at the resource")
	broken := fs.String("break", "none", "disable one protection on purpose: "+strings.Join(sim.BreakNames()[1:], ", "))
	sqlMode := fs.Bool("sql", false, "run the resources on gate/sqlgate over in-memory SQLite instead of gate/memgate (same decisions, slower)")
	beyond := fs.Bool("skew-beyond-bound", false, "give the gate a clock lagging beyond the skew bound in half the rounds; report the effect")
	round := fs.Int("round", 0, "replay only this round (1-based) of the run")
	trace := fs.Bool("trace", false, "with --round: print every event of the round")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	parallel := fs.Int("parallel", runtime.GOMAXPROCS(0), "goroutines running rounds (results do not depend on it)")
	bound := fs.Int64("skew-bound-ms", 0, "configured clock-skew bound of registry and gate in ms (default 500)")
	query := fs.Bool("status-query", false, "the gate asks the registry for each grant's state (linearizable query) instead of trusting status proofs")
	naiveRelease := fs.Bool("naive-release", false, "a client releases at once after a non-final rejection, copies of its writes still in flight (exposes proofs outliving a release)")
	naive := fs.Bool("naive-recovery", false, "a restarted client resumes its operation under whatever grant its request ID returns (exposes the gate's equal-fence gap)")
	alg := fs.String("alg", "hmac-sha256", "proof algorithm of every key: hmac-sha256, or ed25519 (the production default; same decisions, rounds about 3x slower)")
	budget := fs.Int64("handoff-budget-ms", 0, "handoff p99 budget in ms (default 3000)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	cfg, err := simConfig(*rounds, *seed, *faults, *broken, *unsafe)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	cfg.SkewBeyondBound, cfg.Round, cfg.Parallel, cfg.HandoffBudgetMs = *beyond, *round, *parallel, *budget
	cfg.Alg, cfg.NaiveRecovery, cfg.StatusQuery, cfg.SkewBoundMs = grant.Alg(*alg), *naive, *query, *bound
	cfg.NaiveRelease, cfg.SQL = *naiveRelease, *sqlMode
	if *trace {
		if *round == 0 {
			return fmt.Errorf("%w: --trace needs --round", errUsage)
		}
		cfg.Trace = stdout
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "seed %d (replay with --seed %d)\n", cfg.Seed, cfg.Seed)
	}
	bar := newProgress(stdout, cfg.Rounds, *asJSON || *trace || *round > 0)
	cfg.Progress = bar.update
	rep, err := sim.Run(cfg)
	bar.clear()
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if *asJSON {
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
