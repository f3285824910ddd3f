package gate

import "sync/atomic"

// Counters counts decisions per outcome. The zero value is ready; it is
// safe for concurrent use. A count is taken when the gate returns its
// answer, so a decision whose transaction the caller later rolls back is
// still counted (the counters describe decisions, not commits).
type Counters struct {
	n [outcomeCount]atomic.Uint64
}

var outcomeIndexes = func() map[Outcome]int {
	m := make(map[Outcome]int, 16)
	for i, o := range Outcomes {
		m[o] = i
	}
	return m
}()

// Add counts one decision with outcome o; unknown outcomes are ignored.
func (c *Counters) Add(o Outcome) {
	if i, ok := outcomeIndexes[o]; ok {
		c.n[i].Add(1)
	}
}

// Get returns the count for o.
func (c *Counters) Get(o Outcome) uint64 {
	if i, ok := outcomeIndexes[o]; ok {
		return c.n[i].Load()
	}
	return 0
}

// Count is one outcome's count.
type Count struct {
	Outcome Outcome
	N       uint64
}

// Snapshot returns every outcome's count in the order of Outcomes.
func (c *Counters) Snapshot() []Count {
	out := make([]Count, len(Outcomes))
	for i, o := range Outcomes {
		out[i] = Count{o, c.n[i].Load()}
	}
	return out
}

// outcomeCount is len(Outcomes); an init check keeps them equal.
const outcomeCount = 17

func init() {
	if len(Outcomes) != outcomeCount {
		panic("gate: outcomeCount out of date")
	}
}
