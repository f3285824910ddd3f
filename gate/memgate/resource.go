package memgate

import (
	"sync"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
)

// Record kinds.
const (
	KindAlarm      = "alarm"      // Record.Alarm says which
	KindQuarantine = "quarantine" // a segment arrived again with another payload
	KindShadow     = "shadow"     // shadow mode let a rejected mutation through
	KindOperator   = "operator"   // an operator action
)

// RecordsPerResourceMax bounds the records kept per resource; the oldest
// go first. The receipts, which MUTATION_UNKNOWN recovery relies on, are
// never dropped.
const RecordsPerResourceMax = 1024

// Record is one alarm, quarantine, shadow-log or operator entry.
type Record struct {
	Kind    string
	Alarm   gate.AlarmKind // for KindAlarm
	Outcome gate.Outcome   // the decision that wrote it (not for KindOperator)
	Fence   uint64
	Seq     uint64
	Grant   string // the mutation's grant digest
	Detail  string
	At      time.Time // gate clock
}

type receiptKey struct{ fence, seq uint64 }

// resource is one protected resource: its fence state, every receipt (by
// segment and by operation), and its records. mu is its row lock.
type resource struct {
	mu       sync.Mutex
	state    gate.FenceState
	receipts map[receiptKey]gate.Receipt
	byOp     map[string][]gate.Receipt // in acceptance order: fence, then segment
	records  []Record
}

func newResource(name string, mode gate.Mode) *resource {
	return &resource{state: gate.FenceState{Resource: name, Mode: mode},
		receipts: map[receiptKey]gate.Receipt{}, byOp: map[string][]gate.Receipt{}}
}

func (r *resource) receipt(fence, seq uint64) *gate.Receipt {
	if p, ok := r.receipts[receiptKey{fence, seq}]; ok {
		return &p
	}
	return nil
}

// commit writes what decision d asks for, after the business change (if
// it proceeded) succeeded: the accept's state and receipt, a pause, and
// the alarm, quarantine and shadow-log records. dec checks the state it
// stores.
func (r *resource) commit(dec *adapt.Decider, d gate.Decision, v *gate.Verified, prior *gate.Receipt, now time.Time) {
	m := &v.Mutation
	if d.Store {
		dec.CheckStore(r.state, d.State)
		r.state = d.State
	}
	if d.Outcome == gate.Accepted {
		rc := d.Receipt
		r.receipts[receiptKey{rc.FenceToken, rc.SegmentSeq}] = rc
		r.byOp[rc.OperationID] = append(r.byOp[rc.OperationID], rc)
	}
	var reason string
	if rej, ok := d.Err.(*gate.Rejection); ok {
		reason = rej.Reason
	}
	base := Record{Outcome: d.Outcome, Fence: m.FenceToken, Seq: m.SegmentSeq, Grant: v.GrantDigest.String(), Detail: reason, At: now}
	if d.Alarm {
		rec := base
		rec.Kind, rec.Alarm = KindAlarm, d.AlarmKind
		r.record(rec)
	}
	if d.Quarantine {
		rec := base
		rec.Kind = KindQuarantine
		rec.Detail = "original receipt " + prior.ID() + "; " + reason
		r.record(rec)
	}
	if d.ShadowLog {
		rec := base
		rec.Kind = KindShadow
		r.record(rec)
	}
}

func (r *resource) record(rec Record) {
	if len(r.records) >= RecordsPerResourceMax {
		r.records = append(r.records[:0], r.records[1:]...)
	}
	r.records = append(r.records, rec)
}
