package gatemetrics

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/gate"
)

// UnknownOpenMax bounds the operations an UnknownTracker remembers,
// 10000; past it new ones are counted as dropped, the oldest kept (they
// are the ones the age alert is about).
const UnknownOpenMax = 10000

// UnknownTracker measures MUTATION_UNKNOWN at the gate: an operation
// whose receipt query (sqlgate.Gate.QueryOperation) answered UNDETERMINED
// is open from that first answer until a query about it answers ACCEPTED
// or PROVEN_ABSENT. Its gauges are the number open and the age of the
// oldest, which the specification wants below 15 minutes
// (fencegate_gate_unknown_oldest_age_seconds). It is in memory: a restart
// of the service forgets what was open. Safe for concurrent use.
type UnknownTracker struct {
	mu      sync.Mutex
	now     func() time.Time
	open    map[[2]string]time.Time // (resource, operation) → first UNDETERMINED
	dropped uint64
}

// NewUnknownTracker returns a tracker on the clock now (nil: time.Now).
func NewUnknownTracker(now func() time.Time) *UnknownTracker {
	if now == nil {
		now = time.Now
	}
	return &UnknownTracker{now: now, open: map[[2]string]time.Time{}}
}

// Observe records one receipt query's verdict about an operation.
func (u *UnknownTracker) Observe(resource, operationID string, v gate.Verdict) {
	k := [2]string{resource, operationID}
	u.mu.Lock()
	defer u.mu.Unlock()
	switch v {
	case gate.VerdictUndetermined:
		if _, ok := u.open[k]; ok {
			return
		}
		if len(u.open) >= UnknownOpenMax {
			u.dropped++
			return
		}
		u.open[k] = u.now()
	case gate.VerdictAccepted, gate.VerdictProvenAbsent:
		delete(u.open, k)
	}
}

// Open returns how many operations are open and the oldest one's age.
func (u *UnknownTracker) Open() (n int, oldest time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.now()
	for _, t := range u.open {
		oldest = max(oldest, now.Sub(t))
	}
	return len(u.open), oldest
}

// Collectors returns the tracker's gauges and its dropped counter.
func (u *UnknownTracker) Collectors(constLabels prometheus.Labels) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fencegate_gate_unknown_open",
			Help: "Operations whose receipt query answered UNDETERMINED and no later query ACCEPTED or PROVEN_ABSENT.", ConstLabels: constLabels},
			func() float64 { n, _ := u.Open(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fencegate_gate_unknown_oldest_age_seconds",
			Help: "Age of the oldest open UNDETERMINED operation (0 when none); the specification wants UNKNOWN reconciled within 15 minutes.", ConstLabels: constLabels},
			func() float64 { _, d := u.Open(); return d.Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fencegate_gate_unknown_dropped_total",
			Help: "UNDETERMINED operations not tracked because UnknownOpenMax were open.", ConstLabels: constLabels},
			func() float64 { u.mu.Lock(); defer u.mu.Unlock(); return float64(u.dropped) }),
	}
}

// OpenOp is one open MUTATION_UNKNOWN operation.
type OpenOp struct {
	Resource, OperationID string
	Since                 time.Time // its first UNDETERMINED answer
}

// Oldest returns up to n open operations, oldest first (ties by resource
// and operation ID).
func (u *UnknownTracker) Oldest(n int) []OpenOp {
	u.mu.Lock()
	out := make([]OpenOp, 0, len(u.open))
	for k, t := range u.open {
		out = append(out, OpenOp{Resource: k[0], OperationID: k[1], Since: t})
	}
	u.mu.Unlock()
	slices.SortFunc(out, func(a, b OpenOp) int {
		if c := a.Since.Compare(b.Since); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.OperationID, b.OperationID))
	})
	return out[:min(max(n, 0), len(out))]
}
