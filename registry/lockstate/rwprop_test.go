// This file proves the read/write lock's rules on random schedules of
// readers and writers (acquiring, waiting, renewing, releasing,
// downgrading, crashing, the clock moving): never a writer beside anyone,
// readers only while no writer holds, no reader admitted past a queued
// writer, a downgrade lets no writer in between and keeps the fence, no
// other reader is admitted while a downgraded write lease's HELD
// statements may be fresh, and under a steady stream of both kinds every
// waiter is served within a bound. Each rule has a mutant that breaks it,
// and the same checks catch each mutant.
package lockstate

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// rwMutant is a rule broken on purpose (the negative controls).
type rwMutant int

const (
	rwCorrect rwMutant = iota
	// rwWriterBeside: a writer at the head is granted while only readers hold.
	rwWriterBeside
	// rwReaderPref: a reader is granted whenever no writer holds, queued
	// writers or not (reader preference).
	rwReaderPref
	// rwDowngrade2Step: a downgrade is a release, then a read acquire.
	rwDowngrade2Step
	// rwReadersAtOnce: a downgrade admits other readers at once.
	rwReadersAtOnce
)

type rwClient struct {
	owner    string
	read     bool
	seq      int
	in       AcquireInput
	state    string // idle, waiting, held, downgrading, dead
	lease    string
	waitFrom int  // the round its wait began (the stream)
	inStream bool // its attempt began in the steady stream
	heldFrom int
	// downgrading (mutant): the fence and writer grants at its start
	dgFence  uint64
	dgGrants int
}

type rwWorld struct {
	lim      Limits
	mutant   rwMutant
	now      int64
	round    int
	rec      *Record
	entries  map[RequestKey]*RequestEntry
	clients  []*rwClient
	writers  int              // writer grants so far
	valid    map[string]int64 // lease → latest validUntil of a HELD statement issued for it
	freshTil int64            // the latest validUntil of a downgraded write lease's statements
	noPref   bool             // the writer-preference check is off (a mutant's starvation alone)
	stream   bool             // in the steady stream
	// non-vacuity
	downgrades, readersShared, readersHeldBack, handedRuns int
}

func newRWWorld(m rwMutant) *rwWorld {
	w := &rwWorld{lim: testLimits(), mutant: m, now: t0, rec: &Record{}, entries: map[RequestKey]*RequestEntry{}, valid: map[string]int64{}}
	for i, read := range []bool{true, true, true, false, false} {
		w.clients = append(w.clients, &rwClient{owner: fmt.Sprint("c", i), read: read, state: "idle"})
	}
	return w
}

func (w *rwWorld) taken() []RequestKey {
	var out []RequestKey // only queued keys can matter (handOff)
	for _, t := range w.rec.Waiters {
		if k := (RequestKey{Owner: t.Owner, RequestID: t.RequestID}); w.entries[k] != nil {
			out = append(out, k)
		}
	}
	return out
}

// statement notes a HELD statement issued for h now, as a replica whose
// clock is ahead by the whole skew bound would issue it.
func (w *rwWorld) statement(h Holder) {
	v := StatusValidUntil(grant.StateHeld, h.ExpiresAtMs, w.now+int64(w.lim.ClockSkewMaxMs), w.lim)
	w.valid[h.Grant.Lease] = max(w.valid[h.Grant.Lease], v)
}

// commit writes next (nil: nothing) and the entries, and checks every
// grant the write made: before is the record it was decided on,
// normalized; downgrader the lease key a downgrade granted (exempt from
// the statements' rule).
func (w *rwWorld) commit(before, next *Record, puts []EntryPut, downgrader RequestKey) error {
	if next == nil {
		return nil
	}
	for _, p := range puts {
		e := p.Entry
		w.entries[p.Key] = &e
		h := Holder{Grant: e.Grant, ExpiresAtMs: e.Grant.IssuedAtMs + int64(e.Grant.TTLMs)}
		w.statement(h)
		if _, read := wire.ReadOf(e.Grant.Resource); !read {
			w.writers++
			continue
		}
		if p.Key == downgrader {
			continue
		}
		idx := waiterIndex(before, p.Key)
		ahead := before.Waiters
		if idx >= 0 {
			ahead = before.Waiters[:idx]
		}
		for _, t := range ahead {
			// a writer's ticket dropped in this write (its deadline passed,
			// or it let a free resource's claim window pass) holds nobody back
			if !w.noPref && !t.Read && waiterIndex(next, RequestKey{Owner: t.Owner, RequestID: t.RequestID}) >= 0 {
				return fmt.Errorf("writer preference: reader %s admitted past the queued writer %s", p.Key.Owner, t.Owner)
			}
		}
		if w.now < w.freshTil {
			return fmt.Errorf("reader %s admitted at %d while a downgraded write lease's HELD statement is valid until %d", p.Key.Owner, w.now-t0, w.freshTil-t0)
		}
		if len(before.Readers) > 0 {
			w.readersShared++
		}
	}
	if len(puts) > 1 {
		w.handedRuns++
	}
	w.rec = next
	return w.check()
}

// check: never a writer beside anyone, judged at now.
func (w *rwWorld) check() error {
	n, _ := Normalize(w.rec, Settings{}, w.now, w.lim)
	if n.Holder != nil && len(n.Readers) > 0 {
		return fmt.Errorf("writer %s beside %d readers", n.Holder.Grant.Owner, len(n.Readers))
	}
	return nil
}

func (w *rwWorld) begin(c *rwClient, waitMs int64) {
	c.seq++
	c.in = rwIn(c.owner, fmt.Sprintf("%s-%d", c.owner, c.seq), c.read, true, w.now)
	c.in.DeadlineMs = w.now + waitMs
	c.state, c.waitFrom, c.inStream = "waiting", w.round, w.stream
}

// acquire steps c's acquire once.
func (w *rwWorld) acquire(c *rwClient) error {
	before, _ := Normalize(w.rec, Settings{}, w.now, w.lim)
	own := w.entries[c.in.Key()]
	d, err := DecideAcquire(w.rec, own, Settings{}, c.in, w.now, w.lim)
	if err == nil && d.Outcome == AcquireQueued && own == nil {
		d = w.mutate(c, before, d)
	}
	switch {
	case errors.Is(err, wire.ErrWaitTimeout) && c.inStream:
		return fmt.Errorf("starvation: %s (read %t) waited %d rounds, its whole wait", c.owner, c.read, w.round-c.waitFrom)
	case errors.Is(err, wire.ErrWaitTimeout), errors.Is(err, wire.ErrBusy):
		c.state = "idle"
		return nil
	case err != nil:
		return err
	}
	switch d.Outcome {
	case AcquireGranted:
		if err := w.commit(before, d.Record, d.Entries, RequestKey{}); err != nil {
			return err
		}
		c.state, c.lease, c.heldFrom = "held", d.Body.Lease, w.round
	case AcquireExisting:
		if EntryState(w.rec, own, Settings{}, w.now) != grant.StateHeld {
			c.state = "idle"
			return nil
		}
		c.state, c.lease, c.heldFrom = "held", own.Grant.Lease, w.round
	case AcquireQueued:
		if d.Record != nil {
			w.rec = d.Record
		}
		if len(before.Waiters) > 0 && c.read && before.Holder == nil {
			w.readersHeldBack++
		}
	default:
		return fmt.Errorf("%s: outcome %d", c.owner, d.Outcome)
	}
	return nil
}

// mutate applies the mutant's rule to a decision that queued c.
func (w *rwWorld) mutate(c *rwClient, before *Record, d AcquireDecision) AcquireDecision {
	next := before.Clone()
	idx := waiterIndex(next, c.in.Key())
	var grantIt func() (GrantBody, EntryPut, error)
	t := c.in.ticket(paramsDigest(c.in.grantResource(), c.in.Req.OperationID, c.in.Req.OperationClass, c.in.TTLMs), w.now, w.lim)
	switch {
	case w.mutant == rwReaderPref && c.read && next.Holder == nil && w.now >= next.FreeAtMs && w.now >= next.ReadersFromMs:
		grantIt = func() (GrantBody, EntryPut, error) { return grantRead(next, "rw/1", Settings{}, t, idx, w.now, w.lim) }
	case w.mutant == rwWriterBeside && !c.read && next.Holder == nil && w.now >= next.FreeAtMs && (idx == 0 || idx < 0 && len(next.Waiters) == 0):
		grantIt = func() (GrantBody, EntryPut, error) { return grantLease(next, "rw/1", Settings{}, t, idx, w.now, w.lim) }
	default:
		return d
	}
	body, put, err := grantIt()
	if err != nil {
		return d
	}
	return AcquireDecision{Outcome: AcquireGranted, Record: next, Entries: []EntryPut{put}, Body: body}
}

// downgrade turns c's write lease into a reader's (or, for the two-step
// mutant, releases it and asks to read at its next step).
func (w *rwWorld) downgrade(c *rwClient) error {
	before, _ := Normalize(w.rec, Settings{}, w.now, w.lim)
	if before.Holder == nil || before.Holder.Grant.Lease != c.lease {
		return nil // its lease ended: it learns at its next call
	}
	fence, grants := before.Holder.Grant.FenceToken, w.writers
	w.downgrades++
	if w.mutant == rwDowngrade2Step {
		rel, err := DecideRelease(w.rec, Settings{}, c.owner, c.lease, w.now, w.lim, w.taken())
		if err != nil {
			return err
		}
		if err := w.commit(before, rel.Record, rel.Entries, RequestKey{}); err != nil {
			return err
		}
		c.read = true
		w.begin(c, 20_000)
		c.state, c.dgFence, c.dgGrants = "downgrading", fence, grants
		return nil
	}
	c.seq++
	in, err := NewDowngradeInput(c.owner, wire.DowngradeRequest{Resource: "rw/1", Lease: c.lease, RequestID: fmt.Sprintf("%s-%d", c.owner, c.seq)})
	if err != nil {
		return err
	}
	write := w.valid[c.lease]
	d, err := DecideDowngrade(w.rec, nil, Settings{}, in, w.now, w.lim)
	if err != nil {
		return err
	}
	if w.mutant == rwReadersAtOnce {
		d.Record.ReadersFromMs = 0
	}
	w.freshTil = max(w.freshTil, write)
	if err := w.commit(before, d.Record, d.Entries, in.Key()); err != nil {
		return err
	}
	c.read, c.lease = true, d.Body.Lease
	return w.downgraded(d.Body.FenceToken, fence, grants)
}

// downgraded checks a finished downgrade: the reader's fence is the
// write lease's, and no writer was granted in between.
func (w *rwWorld) downgraded(got, fence uint64, grants int) error {
	if got != fence || w.writers != grants {
		return fmt.Errorf("downgrade: a writer got in between (%d writer grants), reader fence %d, write fence %d", w.writers-grants, got, fence)
	}
	return nil
}

// act makes c's next move; hold is how many rounds a holder keeps its
// lease before releasing.
func (w *rwWorld) act(c *rwClient, rng *rand.Rand, hold int, chaos bool) error {
	switch c.state {
	case "idle":
		c.read = c.owner < "c3" // writers stay writers after a downgrade ends
		w.begin(c, 20_000)
		return w.acquire(c)
	case "waiting":
		return w.acquire(c)
	case "downgrading":
		if err := w.acquire(c); err != nil || c.state != "held" {
			return err
		}
		e := w.entries[c.in.Key()]
		return w.downgraded(e.Grant.FenceToken, c.dgFence, c.dgGrants)
	case "held":
		if w.round-c.heldFrom < hold {
			return nil
		}
		switch k := rng.IntN(10); {
		case chaos && k == 0:
			c.state = "dead" // it stops; its lease runs out
			return nil
		case chaos && k < 3:
			if d, err := DecideRenew(w.rec, Settings{}, c.owner, c.lease, w.now, w.lim); err == nil {
				w.statement(d.Holder)
				w.rec = d.Record
				return nil
			}
		case k < 5 && !c.read:
			return w.downgrade(c)
		}
		before, _ := Normalize(w.rec, Settings{}, w.now, w.lim)
		rel, err := DecideRelease(w.rec, Settings{}, c.owner, c.lease, w.now, w.lim, w.taken())
		c.state = "idle"
		if err != nil {
			return nil // it ended otherwise
		}
		if err := w.commit(before, rel.Record, rel.Entries, RequestKey{}); err != nil || chaos {
			return err
		}
		// the steady stream: it asks again at once
		c.read = c.owner < "c3"
		w.begin(c, 20_000)
		return w.acquire(c)
	case "dead":
		n, _ := Normalize(w.rec, Settings{}, w.now, w.lim)
		if !holdingRequest(n, c.in.Key()) && readerIndex(n, c.lease) < 0 {
			c.state = "idle" // restarted once its lease ran out
		}
	}
	return nil
}

// run: a random phase (any move, crashes, the clock jumping), then a
// steady stream (everyone asks again as soon as it let go, holders keep
// their lease a round or two, no crashes): every wait must end within
// waitRoundsMax rounds.
func (w *rwWorld) run(rng *rand.Rand, steps, rounds int) error {
	for range steps {
		c := w.clients[rng.IntN(len(w.clients))]
		if rng.IntN(4) == 0 {
			w.now += rng.Int64N(1500)
			w.round++
		}
		if err := w.act(c, rng, 0, true); err != nil {
			return err
		}
		if err := w.check(); err != nil {
			return err
		}
	}
	const waitRoundsMax = 60 // a crashed holder's TTL (10 s) and lock-delay at 300 ms a round, and the queue
	w.stream = true
	for range rounds {
		w.round++
		w.now += 300
		for _, i := range rng.Perm(len(w.clients)) {
			c := w.clients[i]
			if err := w.act(c, rng, 2+rng.IntN(3), false); err != nil {
				return err
			}
			if c.state == "waiting" && c.inStream && w.round-c.waitFrom > waitRoundsMax {
				return fmt.Errorf("starvation: %s (read %t) waited %d rounds", c.owner, c.read, w.round-c.waitFrom)
			}
		}
		if err := w.check(); err != nil {
			return err
		}
	}
	return nil
}

func TestRWLockInterleavings(t *testing.T) {
	var downgrades, shared, heldBack, runs int
	for seed := range uint64(60) {
		w := newRWWorld(rwCorrect)
		if err := w.run(rand.New(rand.NewPCG(seed, 46)), 400, 300); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		downgrades, shared, heldBack, runs = downgrades+w.downgrades, shared+w.readersShared, heldBack+w.readersHeldBack, runs+w.handedRuns
	}
	t.Logf("downgrades %d, readers admitted beside readers %d, readers held back %d, runs of readers handed together %d", downgrades, shared, heldBack, runs)
	if downgrades == 0 || shared == 0 || heldBack == 0 || runs == 0 {
		t.Fatal("vacuous: some path was never taken")
	}
}

// TestRWLockInterleavingsCatchMutants is the negative control: each
// broken rule is caught by the check that names it.
func TestRWLockInterleavingsCatchMutants(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutant rwMutant
		want   string
	}{
		{"writer beside readers", rwWriterBeside, "beside"},
		{"reader preference", rwReaderPref, "writer preference"},
		{"reader preference starves writers", rwReaderPref, "starvation"},
		{"downgrade in two steps", rwDowngrade2Step, "got in between"},
		{"readers at once after a downgrade", rwReadersAtOnce, "HELD statement"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for seed := range uint64(60) {
				w := newRWWorld(c.mutant)
				err := w.run(rand.New(rand.NewPCG(seed, 46)), 400, 300)
				if c.want == "starvation" {
					// the stream alone: no random phase, so the first
					// failure is the writer's wait
					w = newRWWorld(c.mutant)
					err = w.runStreamOnly(rand.New(rand.NewPCG(seed, 46)), 300)
				}
				if err != nil && strings.Contains(err.Error(), c.want) {
					t.Logf("seed %d: %v", seed, err)
					return
				}
			}
			t.Fatalf("the checks never caught the mutant (want %q)", c.want)
		})
	}
}

// runStreamOnly is run's steady stream alone, with the writer-preference
// check off (reporting only starvation).
func (w *rwWorld) runStreamOnly(rng *rand.Rand, rounds int) error {
	w.noPref = true
	return w.run(rng, 0, rounds)
}
