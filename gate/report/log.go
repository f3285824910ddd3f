package report

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/gate"
)

// LogMax is how many decisions a Log keeps, the last 64.
const LogMax = 64

// OutcomeError is a Decision's outcome when the gate gave no decision
// (the database or the business function failed).
const OutcomeError = "ERROR"

// Log keeps the gate's last LogMax decisions for the Reporter. The service
// calls Note after each Run (or Apply) has returned; Note copies a few
// fields into a fixed ring under a mutex and does nothing else (no I/O, no
// allocation beyond what the decision already made). Safe for concurrent
// use.
type Log struct {
	id    string
	clock clock.Clock

	mu   sync.Mutex
	ring [LogMax]Decision
	seq  uint64 // decisions noted so far; ring[(seq-1)%LogMax] is the last
}

// NewLog returns an empty Log on clk (nil: the system clock) with a fresh
// random LogID.
func NewLog(clk clock.Clock) *Log {
	if clk == nil {
		clk = clock.System{}
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &Log{id: hex.EncodeToString(b), clock: clk}
}

// ID is the Log's random identity (Report.LogID).
func (l *Log) ID() string { return l.id }

// Note records the answer err (nil for ACCEPTED) that the gate gave caller
// for m.
func (l *Log) Note(caller string, m *gate.Mutation, err error) {
	d := Decision{AtMs: l.clock.Now().UnixMilli(), Resource: m.Resource, Fence: m.FenceToken,
		Segment: m.SegmentSeq, Caller: caller, Outcome: string(gate.OutcomeOf(err))}
	if d.Outcome == "" {
		d.Outcome = OutcomeError
	}
	var rej *gate.Rejection
	if errors.As(err, &rej) {
		d.Reason, d.HighestFence = rej.Reason, rej.HighestFence
	} else if d.Outcome == OutcomeError {
		d.Reason = err.Error()
	}
	l.mu.Lock()
	l.seq++
	d.Seq = l.seq
	l.ring[(l.seq-1)%LogMax] = d
	l.mu.Unlock()
}

// Last returns up to n of the latest decisions, oldest first.
func (l *Log) Last(n int) []Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	n = int(min(uint64(max(n, 0)), l.seq, LogMax))
	out := make([]Decision, 0, n)
	for s := l.seq - uint64(n) + 1; s <= l.seq && n > 0; s++ {
		out = append(out, l.ring[(s-1)%LogMax])
	}
	return out
}
