package sim

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fencegate/fencegate/grant"
)

// chunkRounds is how many rounds run between in-order merges: it bounds
// the memory held for results that are waiting for an earlier round.
const chunkRounds = 512

// Run executes cfg's rounds and returns the report. Rounds are independent
// worlds seeded from (Seed, round), so Parallel changes only the speed.
func Run(cfg Config) (*Report, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	keys, err := newKeySet(cfg.Alg, cfg.skewBound())
	if err != nil {
		return nil, err
	}
	first, last := 1, cfg.Rounds
	if cfg.Round > 0 {
		first, last = cfg.Round, cfg.Round
	}
	var envs []*sqlEnv
	if cfg.SQL || cfg.PG {
		for range cfg.Parallel {
			env, err := newEnv(keys, &cfg)
			if err != nil {
				return nil, err
			}
			defer env.close()
			envs = append(envs, env)
		}
	}
	start := time.Now() // wall time for the report only; no decision reads it
	total := &Counts{}
	done := 0
	for lo := first; lo <= last; lo += chunkRounds {
		hi := min(lo+chunkRounds-1, last)
		results := runChunk(&cfg, keys, envs, lo, hi)
		for _, c := range results {
			total.merge(c)
			done++
		}
		if cfg.Progress != nil {
			cfg.Progress(done)
		}
	}
	return newReport(&cfg, total, time.Since(start)), nil
}

// newEnv opens one goroutine's database: SQLite for the SQL mode, a
// fresh PostgreSQL database for the PostgreSQL mode.
func newEnv(keys *keySet, cfg *Config) (*sqlEnv, error) {
	if cfg.PG {
		return newPGEnv(cfg, keys)
	}
	return newSQLEnv(keys.gatePolicy(cfg.Negative), cfg)
}

// runChunk runs rounds lo..hi on cfg.Parallel goroutines; results come
// back indexed by round. In the SQL mode each goroutine takes one of envs.
func runChunk(cfg *Config, keys *keySet, envs []*sqlEnv, lo, hi int) []*Counts {
	results := make([]*Counts, hi-lo+1)
	next := make(chan int)
	var wg sync.WaitGroup
	for i := range min(cfg.Parallel, len(results)) {
		var env *sqlEnv
		if cfg.SQL || cfg.PG {
			env = envs[i]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range next {
				results[r-lo] = runRound(cfg, keys, env, r)
			}
		}()
	}
	for r := lo; r <= hi; r++ {
		next <- r
	}
	close(next)
	wg.Wait()
	return results
}

// RunRound runs round r of cfg alone and returns what its checker counted
// (in the SQL mode, on a database of its own).
func RunRound(cfg *Config, keys *keySet, r int) *Counts {
	var env *sqlEnv
	if cfg.SQL || cfg.PG {
		var err error
		if env, err = newEnv(keys, cfg); err != nil {
			panic(err)
		}
		defer env.close()
	}
	return runRound(cfg, keys, env, r)
}

func runRound(cfg *Config, keys *keySet, env *sqlEnv, r int) *Counts {
	c := &Counts{}
	if err := playRound(cfg, keys, env, r, c); err != nil {
		c.AdapterInconsistent++
		c.violation(r, roundSeed(cfg.Seed, r), "adapter-inconsistent", err.Error())
	}
	for i := range c.Violations {
		c.Violations[i].Seed = cfg.Seed
		c.Violations[i].Repro = reproCommand(cfg, r)
	}
	return c
}

// playRound runs round r into c. An adapter check of the simulator's
// failing (a panic whose value begins "sim: ": an answer the store
// contradicts, a receipt query that errs) ends the round and is
// returned, so the run reports it with the command that replays it; any
// other panic is a bug of the simulator and goes on up.
func playRound(cfg *Config, keys *keySet, env *sqlEnv, r int, c *Counts) (err error) {
	defer func() {
		if p := recover(); p != nil {
			msg, ok := p.(string)
			if !ok || !strings.HasPrefix(msg, "sim: ") {
				panic(p)
			}
			err = errors.New(msg)
		}
	}()
	w := newWorld(cfg, keys, r, c, env)
	w.run()
	if a, ok := w.res.g.(*objAdapter); ok && a.store.faults != nil {
		f := a.store.faults
		c.StoreBatchFailed, c.StoreLost412, c.StoreLostError = f.batchFailed, f.lost412, f.lostError
	}
	return nil
}

// reproCommand is the one line that replays round r exactly.
func reproCommand(cfg *Config, r int) string {
	cmd := "fencegate sim"
	if n := cfg.negativeName(); n != "" {
		cmd = "go run ./sim/cmd/simbreak --break " + n // the negative controls are not in the binary
	}
	cmd += fmt.Sprintf(" --seed %d --rounds %d --round %d --faults %s", cfg.Seed, cfg.Rounds, r, FaultsString(cfg.Rates))
	if cfg.SkewBeyondBound {
		cmd += " --skew-beyond-bound"
	}
	if cfg.SkewBoundMs != SkewBoundMsDefault {
		cmd += fmt.Sprintf(" --skew-bound-ms %d", cfg.SkewBoundMs)
	}
	if cfg.StatusQuery {
		cmd += " --status-query"
	}
	if cfg.NaiveRelease {
		cmd += " --naive-release"
	}
	if cfg.NaiveRecovery {
		cmd += " --naive-recovery"
	}
	if cfg.Alg != grant.AlgHMACSHA256 {
		cmd += " --alg " + string(cfg.Alg)
	}
	if cfg.SQL {
		cmd += " --sql"
	}
	if cfg.PG {
		cmd += " --pg"
	}
	if cfg.Objects {
		cmd += " --obj"
	}
	if cfg.StoreFaults {
		cmd += " --store-faults"
	}
	return cmd + " --trace"
}
