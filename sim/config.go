package sim

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencegate/fencegate/grant"
)

// Fault is one kind of injected fault. Each has a rate: the probability
// that a round injects it (some faults then act on several messages).
type Fault int

// The fault matrix of the specification, plus the adversary.
const (
	FaultPause       Fault = iota // an owner freezes past its TTL, between deciding to write and sending
	FaultLostRenew                // renewal responses are lost
	FaultReleaseRace              // a release interleaves with the next acquire; the release is re-delivered late
	FaultReorder                  // a later segment is sent before an earlier one
	FaultDuplicate                // messages are delivered twice
	FaultPayload                  // an accepted segment is re-sent with another payload
	FaultLate                     // old messages arrive seconds late
	FaultRestore                  // the registry store is restored from an old snapshot (fence regression)
	FaultLostAck                  // the resource's answer to a committed write is lost
	FaultSkew                     // clock skew and drift of gates and clients within the bound
	FaultPartition                // a partition between two parties
	FaultCrash                    // a client crashes and restarts
	FaultAdversary                // forged, tampered, replayed and revoked envelopes
	FaultLateCopy                 // an owner releases without waiting; its last write arrives after the next owner wrote
	FaultGateLag                  // the gate's clock lags the registry's near the skew bound (inside it)
	FaultLongHold                 // a holder keeps its lease, renewing, for several TTLs before it writes: waiters queue past their own TTL
	FaultLostRelease              // a release is answered before its commit (registry.Config.ReleaseEarly) and the commit is lost: the lease lives on to its TTL
	faultCount
)

var faultNames = [faultCount]string{
	"pause", "lost-renew", "release-race", "reorder", "duplicate", "payload", "late",
	"restore", "lost-ack", "skew", "partition", "crash", "adversary", "late-copy", "gate-lag", "long-hold",
	"lost-release",
}

// DefaultRates are the per-round rates of --faults all.
var DefaultRates = [faultCount]float64{
	FaultPause: 0.25, FaultLostRenew: 0.2, FaultReleaseRace: 0.3, FaultReorder: 0.2,
	FaultDuplicate: 0.2, FaultPayload: 0.1, FaultLate: 0.2, FaultRestore: 0.05,
	FaultLostAck: 0.2, FaultSkew: 1, FaultPartition: 0.2, FaultCrash: 0.1, FaultAdversary: 0.3,
	FaultLateCopy: 0.3, FaultGateLag: 0.3, FaultLongHold: 0.2, FaultLostRelease: 0.2,
}

func (f Fault) String() string { return faultNames[f] }

// FaultNames lists every fault name in a fixed order.
func FaultNames() []string { return slices.Clone(faultNames[:]) }

// Skew bound limits. The registry refuses a bound at or above its
// shortest TTL (2 s by default); the shortest leases need a status proof
// to outlive the bound by their write round trip.
const (
	SkewBoundMsDefault = 500
	SkewBoundMsMax     = 900
)

// skewBound is SkewBoundMs as a duration.
func (c *Config) skewBound() time.Duration { return time.Duration(c.SkewBoundMs) * time.Millisecond }

// Config is one run. The zero value of every optional field takes the
// default documented beside it.
type Config struct {
	Rounds int    // number of rounds; required, >= 1
	Seed   uint64 // the run's seed: with the commit, it determines everything
	// Round, when >= 1, runs only that round (1-based), exactly as it ran
	// inside the full run. 0 runs rounds 1..Rounds.
	Round int
	// Rates holds each fault's per-round rate in [0, 1]. Use DefaultRates
	// for every fault.
	Rates [faultCount]float64
	// Negative is the negative control the run makes, or nil for none:
	// one protection off on purpose (sim/negative builds them).
	Negative *Negative
	// restoreUnseen (tests only) hides the restore fault's restore from
	// the checker's history bookkeeping: the store goes back as ZooKeeper
	// 3.8.0 went back when it lost acknowledged transactions, with no
	// restore anyone knew of. The fences issued again are then issued
	// within one history as far as the checker knows, which it must fail
	// (FenceReusedByRegistry: TestUnseenRestoreIsFenceReuse).
	restoreUnseen bool
	// SkewBeyondBound gives the gate a clock that lags the registry by more
	// than ClockSkewMaxMs in BeyondBoundRate of the rounds. Its effect is
	// detected and reported, never silently accepted.
	SkewBeyondBound bool
	// BeyondBoundRate is the share of rounds with the lagging gate clock.
	// Optional, defaults to 0.5.
	BeyondBoundRate float64
	// HandoffBudgetMs is the budget for the p99 of lease free → next
	// holder HELD. Optional, defaults to 3000: lock-delay (1000) plus two
	// acquire retries plus round trips.
	HandoffBudgetMs int64
	// SkewBoundMs is the clock-skew bound the deployment is configured
	// with: the registry's ClockSkewMaxMs (lock-delay is raised to it if
	// below) and the gate's StatusSkewMax. Gate and client clocks stay
	// within it unless SkewBeyondBound. Optional, defaults to
	// SkewBoundMsDefault; at most SkewBoundMsMax.
	SkewBoundMs int64
	// StatusQuery makes the gate ask the registry, linearizably, for the
	// grant's state at each decision (gate.StatusQuerier) instead of
	// trusting the status proof in the envelope: no gate clock is then
	// involved in "is this grant the holder".
	//
	// Its registries issue every grant in the earlier form (grant plus
	// status, registry.Config.SeparateStatus): a grant's own held
	// statement would be evidence the envelope cannot leave out, and a
	// gate trusts a fresh one under its own clock, as it trusts a proof.
	StatusQuery bool
	// NaiveRecovery makes a restarted worker resume its operation under
	// whatever grant its journalled request ID returns, even a different
	// one (which only a registry that lost state issues). It exposes a gap
	// in the gate: a re-issued grant with the same fence and operation
	// root is not told apart from the original (see doc.go).
	NaiveRecovery bool
	// NaiveRelease makes a worker release without the client's drain,
	// with copies of its writes possibly still in the network. It exposes
	// that status proofs outlive a release (see doc.go).
	NaiveRelease bool
	// SQL runs every resource on gate/sqlgate over an in-memory SQLite
	// database (one per goroutine) instead of gate/memgate. Both are the
	// product's adapters over the same decision; the counts of a seed range
	// agree. Negative controls that replace the decision run only in the
	// fast mode: SQLite's own invariants refuse what they would let
	// through.
	SQL bool
	// PG runs every resource on gate/pggate, the gate inside PostgreSQL,
	// each goroutine on a fresh database of the server PGDSN names (the
	// downstream hop's target stays on gate/memgate). Same decisions as
	// the fast mode. It needs HMAC-SHA256 proofs (a database checks no
	// Ed25519), no status querier, and a role that may create databases
	// and roles and SET SESSION AUTHORIZATION (a superuser: each write
	// runs as its caller's role).
	PG bool
	// PGDSN is the server of the PG mode ("" : the PG* environment
	// variables, as psql).
	PGDSN string
	// Objects runs every resource on gate/objgate: two gates, each with
	// its manifest cache, in front of one in-memory bucket per round,
	// writes spread between them (the downstream hop's target stays on
	// gate/memgate). Same decisions as the fast mode. Not with SQL.
	Objects bool
	// StoreFaults, with Objects, makes the bucket fail as a real one does:
	// 30% of receipt-batch PUTs fail before landing, and 15% of the
	// manifest PUTs that change the content land with their answer lost
	// (half seen as the 412 of the SDK's retry, half as an error, which
	// leaves the write's outcome unknown to its sender). The run's
	// decisions then differ from the fast mode's; its counts must not.
	StoreFaults bool
	// Alg is the proof algorithm of every key. Optional, defaults to
	// HMAC-SHA256: a round then costs about a third of an Ed25519 round,
	// which is what fits 100,000 rounds in a minute on two shared cores.
	// The algorithm never changes a decision (the event-log digests of
	// the two are equal; TestAlgorithmDoesNotChangeDecisions), and the
	// grant package tests Ed25519 itself; pass AlgEd25519 to run the
	// production algorithm end to end.
	Alg grant.Alg
	// Parallel is how many goroutines run rounds. Optional, defaults to 1.
	// Results do not depend on it.
	Parallel int
	// Trace, if set, receives one line per event (use with Round).
	Trace io.Writer
	// Progress, if set, is called after each completed round with the
	// number completed so far (from one goroutine at a time).
	Progress func(done int)
}

func (c *Config) fill() error {
	if c.Rounds < 1 {
		return fmt.Errorf("sim: rounds %d, want at least 1", c.Rounds)
	}
	if c.Round < 0 || c.Round > c.Rounds {
		return fmt.Errorf("sim: round %d outside 1..%d", c.Round, c.Rounds)
	}
	for f, r := range c.Rates {
		if r < 0 || r > 1 {
			return fmt.Errorf("sim: rate of %s is %v, want [0, 1]", Fault(f), r)
		}
	}
	if c.BeyondBoundRate == 0 {
		c.BeyondBoundRate = 0.5
	}
	if c.HandoffBudgetMs == 0 {
		c.HandoffBudgetMs = 3000
	}
	if c.Alg == "" {
		c.Alg = grant.AlgHMACSHA256
	}
	if c.Alg != grant.AlgEd25519 && c.Alg != grant.AlgHMACSHA256 {
		return fmt.Errorf("sim: algorithm %q (ed25519 or hmac-sha256)", c.Alg)
	}
	if c.SkewBoundMs == 0 {
		c.SkewBoundMs = SkewBoundMsDefault
	}
	if c.SkewBoundMs < 0 || c.SkewBoundMs > SkewBoundMsMax {
		return fmt.Errorf("sim: skew bound %d ms outside 1..%d", c.SkewBoundMs, SkewBoundMsMax)
	}
	if c.Parallel < 1 {
		c.Parallel = 1
	}
	if c.StoreFaults && (!c.Objects || c.Negative != nil) {
		return errors.New("sim: --store-faults needs --obj, and no --unsafe or --break")
	}
	if c.SQL && c.Objects || c.PG && (c.SQL || c.Objects) {
		return errors.New("sim: --sql, --obj and --pg are three modes; pick one")
	}
	if c.PG && (c.Alg != grant.AlgHMACSHA256 || c.StatusQuery) {
		return errors.New("sim: --pg needs hmac-sha256 proofs and no --status-query (PostgreSQL checks no Ed25519 and cannot ask the registry)")
	}
	if (c.SQL || c.Objects || c.PG) && c.Negative != nil && c.Negative.MemgateOnly {
		return fmt.Errorf("sim: --break %s runs only on gate/memgate, without --sql, --obj or --pg (an adapter's own checks may refuse what it would let through)", c.Negative.Name)
	}
	return nil
}

// ParseFaults turns "all", "none" or a comma-separated list of fault
// names, each optionally "=rate", into rates. Named faults without a rate
// get their default rate.
func ParseFaults(s string) ([faultCount]float64, error) {
	var rates [faultCount]float64
	switch s {
	case "all", "":
		return DefaultRates, nil
	case "none":
		return rates, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, rate, hasRate := strings.Cut(strings.TrimSpace(part), "=")
		i := slices.Index(faultNames[:], name)
		if i < 0 {
			return rates, fmt.Errorf("sim: unknown fault %q (one of %s)", name, strings.Join(faultNames[:], ", "))
		}
		rates[i] = DefaultRates[i]
		if hasRate {
			r, err := strconv.ParseFloat(rate, 64)
			if err != nil || r < 0 || r > 1 {
				return rates, fmt.Errorf("sim: fault %s: rate %q, want a number in [0, 1]", name, rate)
			}
			rates[i] = r
		}
	}
	return rates, nil
}
