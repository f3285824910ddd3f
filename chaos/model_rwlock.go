package chaos

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/fencegate/fencegate/gate"
)

// The porcupine model of a read/write lock NAME (issue 46), one lock's
// registry record and one its gate, each a partition (as the exclusive
// lock's):
//
//   - a writer excludes: a write grant needs no other holder (a writer or
//     a reader whose own lease, plus lock-delay, has not run out); a
//     read grant needs no writer; readers share;
//   - fences: a writer's grant carries a fence above every earlier one
//     and above the floor; a reader's carries the registry's last fence
//     (the last writer's; before any writer, the next fence, which the
//     reader claims for every reader after it);
//   - each holder has its own lease: a renewal extends only the renewing
//     lease, and a reader's share ends at its own expiry;
//   - a downgrade is one registry write (lockstate.DecideDowngrade): the
//     write lease ends (RELEASED) and its owner is granted a NEW lease, a
//     reader's on wire.ReadResource(NAME) under the downgrade's request
//     ID, with the write lease's fence. No writer gets in between (the
//     new reader holds), and no other reader is admitted before the
//     write lease's HELD statements may have expired (ReadersFromMs: the
//     downgrade's instant plus the status proof's life and the clock
//     skew, or the write lease's expiry if sooner);
//   - the gate: only a writer's grant is ever accepted as a mutation
//     (the exclusive gate's rules on the writers' fences); a reader's
//     grant is refused with gate.ReadGrant and changes nothing.
//
// What the model cannot see in a history: the queue's order (writer
// preference, no starvation); the Spin model (model/rwlock.pml) checks
// those. Operations are what an HTTP client records: acquire (either
// mode) answered with a grant (lease, fence, expiry; a reader's names
// NAME/_read), renew, release (ok, or lost: pending, it may take effect
// before any later operation, or never), downgrade answered with the
// reader's grant (or lost: the write lease may have ended at any instant
// after it was sent, as a lost release; the reader's lease it may have
// created is unknown to the client and not modelled), status, and gate
// decisions with the mode of the grant presented. The model is lenient
// where a history is (a bound it cannot know is taken at its least): a
// lease's expiry is the last one answered, a reader after a dead
// reader's lock-delay is not judged, and fence ranges are not bumped in
// the runs.

// rwReaderRefused is the gate's outcome for a reader's grant presented
// as a mutation grant.
const rwReaderRefused = string(gate.ReadGrant)

// rwStatementsMs bounds how long a HELD statement issued for a write
// lease stays valid after the registry issued it: serve's status proof
// life (2000 ms) plus its clock skew bound (500 ms), the defaults the
// runs use (as lockDelayMs is). After a downgrade no other reader is
// admitted before min(downgrade + rwStatementsMs, write lease's expiry).
const rwStatementsMs = 2000 + 500

// rwMode is a grant's mode.
type rwMode int

const (
	rwWrite rwMode = iota + 1
	rwRead
)

func (m rwMode) String() string {
	if m == rwRead {
		return "read"
	}
	return "write"
}

// opDowngrade is a downgrade answered with the reader's grant. It is a
// kind of its own beside the exclusive model's.
const opDowngrade opKind = 64

// rwInput is one operation on a read/write lock: the exclusive model's
// input (resource: the lock's name, for a reader's operations too) plus
// the grant's mode (grants, decisions) and, for a downgrade, the write
// lease it ends (lease, fence, issuedMs and expiresMs are the reader's
// grant's).
type rwInput struct {
	opInput
	mode rwMode
	from string
}

// rwState is one read/write lock's registry or its gate (the exclusive
// gate's fields). Comparable.
type rwState struct {
	known     bool   // the registry's state is known (false after a restore until a write grant shows it)
	fenceMax  uint64 // every writer's fence is above: the registry's last fence, or the floor raised
	lastFence uint64 // the registry's last fence (HighestFence), which a reader carries; 0: none yet
	writer    string // the writer's lease, "" for none
	writerExp int64  // a lower bound of its expiry
	readers   string // the readers' leases and expiries, "lease@exp" sorted, comma-separated
	// readersFrom is a lower bound of ReadersFromMs: before it, no
	// reader but a downgraded writer's is granted.
	readersFrom int64
	// pending are the holders' releases whose answers were lost and that
	// have not taken effect, as in modelState ("lease*1", sorted).
	pending string
	gate    modelState
}

// rwModelFor is the read/write lock's model for a history (the run's
// lock-delay).
func rwModelFor([]porcupine.Operation) porcupine.Model {
	return newRWModel(modelParams{lockDelayMs: lockDelayMs})
}

func newRWModel(p modelParams) porcupine.Model {
	nd := porcupine.NondeterministicModel{
		Partition: rwPartition,
		Init:      func() []interface{} { return []interface{}{rwState{known: true}} },
		Step: func(state, input, _ interface{}) []interface{} {
			next := p.stepRW(state.(rwState), input.(rwInput))
			out := make([]interface{}, len(next))
			for i := range next {
				out[i] = next[i]
			}
			return out
		},
		DescribeOperation: func(input, _ interface{}) string { return describeRWOp(input.(rwInput)) },
		DescribeState: func(state interface{}) string {
			s := state.(rwState)
			return fmt.Sprintf("registry{known=%t fenceMax=%d last=%d writer=%q exp=%d readers=%q readersFrom=%d pending=%q} gate{H=%d paused=%t}",
				s.known, s.fenceMax, s.lastFence, s.writer, s.writerExp, s.readers, s.readersFrom, s.pending, s.gate.highest, s.gate.paused)
		},
	}
	return nd.ToModel()
}

func rwPartition(h []porcupine.Operation) [][]porcupine.Operation {
	idx := map[string]int{}
	var out [][]porcupine.Operation
	for _, op := range h {
		key := objectOf(op.Input.(rwInput).opInput)
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], op)
	}
	return out
}

// stepRW steps one read/write lock's registry or gate by one answered
// operation: every state it may be in afterwards, none if the answer is
// impossible.
func (p modelParams) stepRW(s rwState, in rwInput) []rwState {
	switch in.kind {
	case opDecide:
		if in.mode == rwRead {
			// a reader's grant is refused before any resource state is read
			if in.outcome == rwReaderRefused || authOutcomes[in.outcome] || in.outcome == "unknown" {
				return []rwState{s}
			}
			return nil
		}
		return s.withGate(stepGate(s.gate, in.opInput))
	case opResume:
		return s.withGate(stepGate(s.gate, in.opInput))
	case opRestore:
		return []rwState{{gate: s.gate}}
	case opRepair:
		s.fenceMax = max(s.fenceMax, in.floor)
		return []rwState{s}
	}
	if !s.known {
		return []rwState{stepRWUnknown(s, in)}
	}
	if in.kind == opRelease && in.outcome == "lost" {
		if s.holds(in.lease) {
			s.pending = pendingAdd(s.pending, in.lease)
			s.pending = pendingCap(s.pending, func(string) int { return 1 })
		}
		return []rwState{s}
	}
	var out []rwState
	for _, before := range s.pendingTaken() {
		for _, next := range p.stepRWAt(before, in) {
			next.pending = pendingCap(next.pending, func(l string) int { return b2i(next.holds(l)) })
			out = append(out, next)
		}
	}
	return out
}

// pendingTaken is every state s may be in once any of its pending
// releases took effect.
func (s rwState) pendingTaken() []rwState {
	out := []rwState{s}
	for lease := range pendingParse(s.pending) {
		for _, o := range out {
			g := o.without(lease)
			g.pending, _ = pendingTake(o.pending, lease)
			out = append(out, g)
		}
	}
	return out
}

// stepRWAt steps a known registry by one operation.
func (p modelParams) stepRWAt(s rwState, in rwInput) []rwState {
	readers := rwParse(s.readers)
	_, reading := readers[in.lease]
	live := func(exp int64) bool { return in.issuedMs+grantSlackMs < exp+p.lockDelayMs }
	switch in.kind {
	case opGrant:
		if in.mode == rwWrite && in.lease == s.writer || in.mode == rwRead && reading {
			return []rwState{s} // the same grant answered again
		}
		if s.writer != "" && live(s.writerExp) {
			return nil // a writer holds: no grant of either mode
		}
		if in.mode == rwRead {
			switch {
			case in.issuedMs+grantSlackMs < s.readersFrom:
				return nil // a reader while a downgraded write lease's statements may be valid
			case s.lastFence != 0 && in.fence != s.lastFence:
				return nil // a reader carries the last fence
			case s.lastFence == 0 && in.fence <= s.fenceMax:
				return nil // the fence a first reader claims is the next one
			}
			readers[in.lease] = in.expiresMs
			s.lastFence, s.fenceMax = in.fence, max(s.fenceMax, in.fence)
			s.writer, s.writerExp, s.readers = "", 0, rwFormat(readers)
			return []rwState{s}
		}
		for _, exp := range readers {
			if live(exp) {
				return nil // a writer beside a reader
			}
		}
		if in.fence <= s.fenceMax {
			return nil // a writer's fence rises
		}
		s.fenceMax, s.lastFence, s.writer, s.writerExp, s.readers = in.fence, in.fence, in.lease, in.expiresMs, ""
	case opRenew:
		if in.outcome != "ok" {
			return []rwState{s}
		}
		switch {
		case in.lease == s.writer:
			s.writerExp = max(s.writerExp, in.callMs+in.ttlMs)
		case reading:
			readers[in.lease] = max(readers[in.lease], in.callMs+in.ttlMs) // its own lease only
			s.readers = rwFormat(readers)
		default:
			return nil // renewed a lease that holds nothing
		}
	case opRelease:
		if in.outcome == "ok" {
			s = s.without(in.lease)
		}
	case opDowngrade:
		switch {
		case in.from == "" || in.from != s.writer:
			return nil // only the writer downgrades
		case in.fence != s.lastFence:
			return nil // the reader's lease carries the write lease's fence
		case in.lease == in.from:
			return nil // a new lease, not the write lease kept
		}
		readers[in.lease] = in.expiresMs
		s.readersFrom = max(s.readersFrom, min(in.issuedMs+rwStatementsMs, s.writerExp))
		s.writer, s.writerExp, s.readers = "", 0, rwFormat(readers)
	case opStatus:
		if in.lease != s.writer && !reading {
			return nil // HELD about a lease that holds nothing
		}
	}
	return []rwState{s}
}

// stepRWUnknown: after a restore the registry's state is unknown until
// a write grant shows it (as the exclusive model's known flag): reads,
// renewals, releases and downgrades are taken as they come.
func stepRWUnknown(s rwState, in rwInput) rwState {
	if in.kind == opGrant && in.mode == rwWrite {
		s.known, s.fenceMax, s.lastFence, s.writer, s.writerExp = true, max(s.fenceMax, in.fence), in.fence, in.lease, in.expiresMs
		s.readers, s.readersFrom, s.pending = "", 0, ""
	}
	return s
}

func (s rwState) withGate(gs []modelState) []rwState {
	out := make([]rwState, len(gs))
	for i, g := range gs {
		out[i] = s
		out[i].gate = g
	}
	return out
}

// holds reports whether lease holds s: its writer or one of its readers.
func (s rwState) holds(lease string) bool {
	if lease != "" && lease == s.writer {
		return true
	}
	_, ok := rwParse(s.readers)[lease]
	return ok
}

// without is s once lease holds nothing.
func (s rwState) without(lease string) rwState {
	if s.writer == lease {
		s.writer, s.writerExp = "", 0
	}
	if r := rwParse(s.readers); len(r) > 0 {
		delete(r, lease)
		s.readers = rwFormat(r)
	}
	return s
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func rwParse(readers string) map[string]int64 {
	m := map[string]int64{}
	if readers == "" {
		return m
	}
	for _, e := range strings.Split(readers, ",") {
		at := strings.LastIndexByte(e, '@')
		exp, _ := strconv.ParseInt(e[at+1:], 10, 64)
		m[e[:at]] = exp
	}
	return m
}

func rwFormat(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s@%d", k, m[k])
	}
	return b.String()
}

func describeRWOp(in rwInput) string {
	switch in.kind {
	case opGrant:
		return fmt.Sprintf("%s grant %s %s fence %d", in.proc, in.mode, in.lease, in.fence)
	case opDowngrade:
		return fmt.Sprintf("%s downgrade %s → reader %s fence %d", in.proc, in.from, in.lease, in.fence)
	case opDecide:
		return fmt.Sprintf("%s %s fence %d seq %d → %s", in.proc, in.mode, in.fence, in.seq, in.outcome)
	}
	return describeOp(in.opInput)
}
