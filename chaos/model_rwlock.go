package chaos

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The porcupine model of a read/write lock (issue 46), one resource per
// partition object as the exclusive lock's (its registry record, its
// gate):
//
//   - a writer excludes: a write grant needs no other holder (a writer or
//     a reader whose own lease, plus lock-delay, has not run out); a
//     read grant needs no writer; readers share;
//   - fences: a writer's grant carries a fence above every earlier one; a
//     reader's carries the last writer's fence; a downgrade (writer →
//     reader) keeps the fence and leaves the lease a reader;
//   - each holder has its own lease: a renewal extends only the renewing
//     lease, and a reader's share ends at its own expiry;
//   - the gate: only a writer's grant is ever accepted as a mutation
//     (the exclusive gate's rules on the writers' fences); a reader's
//     grant is refused with rwReaderRefused and changes nothing.
//
// What the model cannot see in a history: the queue's order (writer
// preference, no starvation); the Spin model (model/rwlock.pml) checks
// those. Operations are what an HTTP client records: acquire with a
// mode answered with a grant (lease, mode, fence, expiry), renew,
// release (ok, or lost: it may have taken effect at any instant after
// it was sent, or never), downgrade, status, and gate decisions with
// the grant's mode.

// rwReaderRefused is the gate's outcome for a reader's grant presented
// as a mutation grant. The product's stable code is to be named when the
// read/write lock lands; chaos histories record whatever it is, and this
// constant must then be that code.
const rwReaderRefused = "READ_GRANT"

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

// opDowngrade is a downgrade answered ok (writer → reader, same lease
// and fence). It is a kind of its own beside the exclusive model's.
const opDowngrade opKind = 64

// rwInput is one operation on a read/write lock: the exclusive model's
// input plus the grant's mode (acquire, decisions).
type rwInput struct {
	opInput
	mode rwMode
}

// rwState is one read/write lock's registry (writer, readers, the last
// writer's fence) or its gate (the exclusive gate's fields). Comparable.
type rwState struct {
	known     bool
	fenceMax  uint64 // the last writer's fence
	writer    string // the writer's lease, "" for none
	writerExp int64
	readers   string // the readers' leases and expiries, "lease@exp" sorted, comma-separated
	gate      modelState
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
			return fmt.Sprintf("registry{known=%t fenceMax=%d writer=%q exp=%d readers=%q} gate{H=%d}",
				s.known, s.fenceMax, s.writer, s.writerExp, s.readers, s.gate.highest)
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
// operation.
func (p modelParams) stepRW(s rwState, in rwInput) []rwState {
	switch in.kind {
	case opDecide:
		if in.mode == rwRead {
			// a reader's grant is refused before anything is committed
			if in.outcome == rwReaderRefused || authOutcomes[in.outcome] || in.outcome == "unknown" {
				return []rwState{s}
			}
			return nil
		}
		return s.withGate(stepGate(s.gate, in.opInput))
	case opResume:
		return s.withGate(stepGate(s.gate, in.opInput))
	case opRelease:
		if in.outcome == "lost" { // took effect at its instant, or never (it ends by TTL)
			return []rwState{s, s.without(in.lease)}
		}
		if in.outcome == "ok" {
			return []rwState{s.without(in.lease)}
		}
		return []rwState{s}
	case opRestore:
		return []rwState{{gate: s.gate}}
	case opRepair:
		s.fenceMax = max(s.fenceMax, in.floor)
		return []rwState{s}
	}
	if !s.known {
		return p.stepRWUnknown(s, in)
	}
	readers := rwParse(s.readers)
	_, reading := readers[in.lease]
	switch in.kind {
	case opGrant:
		if in.lease == s.writer && in.mode == rwWrite || in.mode == rwRead && reading {
			return []rwState{s} // the same grant answered again
		}
		live := func(exp int64) bool { return in.issuedMs+grantSlackMs < exp+p.lockDelayMs }
		if s.writer != "" && live(s.writerExp) {
			return nil // a writer holds: no grant of either mode
		}
		if in.mode == rwRead {
			if in.fence != s.fenceMax {
				return nil // a reader carries the last writer's fence
			}
			readers[in.lease] = in.expiresMs
			s.writer, s.readers = "", rwFormat(readers)
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
		s.fenceMax, s.writer, s.writerExp, s.readers = in.fence, in.lease, in.expiresMs, ""
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
	case opDowngrade:
		if in.lease != s.writer {
			return nil // only the writer downgrades
		}
		readers[in.lease] = s.writerExp
		s.writer, s.writerExp, s.readers = "", 0, rwFormat(readers)
	case opStatus:
		if in.lease != s.writer && !reading {
			return nil // HELD about a lease that holds nothing
		}
	}
	return []rwState{s}
}

// stepRWUnknown: after a restore the registry's state is unknown until
// a write grant shows it (as the exclusive model's known flag): reads
// and renewals are taken as they come.
func (p modelParams) stepRWUnknown(s rwState, in rwInput) []rwState {
	if in.kind == opGrant && in.mode == rwWrite {
		s.known, s.fenceMax, s.writer, s.writerExp, s.readers = true, in.fence, in.lease, in.expiresMs, ""
	}
	return []rwState{s}
}

func (s rwState) withGate(gs []modelState) []rwState {
	out := make([]rwState, len(gs))
	for i, g := range gs {
		out[i] = s
		out[i].gate = g
	}
	return out
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
		return fmt.Sprintf("%s downgrade %s", in.proc, in.lease)
	case opDecide:
		return fmt.Sprintf("%s %s fence %d seq %d → %s", in.proc, in.mode, in.fence, in.seq, in.outcome)
	}
	return describeOp(in.opInput)
}
