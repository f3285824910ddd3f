package sim

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/objgate"
)

// objAdapter is the object mode: gate/objgate, two gates in front of one
// in-memory bucket (objStore), each holding the manifests it committed
// last, with the round's writes spread between them. So a gate often
// decides on a copy the other gate has replaced behind it: the
// conditional replace must refuse each stale accept, and a rejection on
// a stale copy must be taken again on a fresh read, or the checker sees a
// stale accept or a refused current owner. The spreading draws from a
// generator of the adapter's own, not the world's, so a seed runs event
// for event as in the fast mode (TestObjectModeAgreesWithFastMode).
//
// The business change is the content the gate commits: apply calls the
// round's business function only when the bucket holds the content of
// this write; when objgate's answer and the bucket disagree it panics
// with a "sim: " message, which ends the round as an adapter
// inconsistency (playRound).
// Jobs of the downstream hop go to a memgate, the hop's target being
// another service (objgate takes no jobs).
//
// With Config.StoreFaults the bucket fails as a real one does (see
// storeFaults). A write whose store call failed gets no answer from the
// service, as when its answer is lost on the network (errAnswerLost):
// the worker resolves it as MUTATION_UNKNOWN, by resending and by the
// receipt query. If the content stood, the write is checked as the
// accept it is, with the receipt the bucket holds.
type objAdapter struct {
	gates  [2]*objgate.Gate
	store  *objStore
	pick   *rand.Rand
	jobs   memAdapter
	writes int // contents offered, to tell each write's apart
}

// objReceiptsHeld is the object mode's manifests' receipts: few, so that
// a round's handful of accepts writes batches out often and the receipt
// lookups read them (16, the default, would rarely fill in a round).
const objReceiptsHeld = 2

// objGates opens the object mode's two gates on store with cfg's policy,
// clock, querier and mode (cfg as memgate's).
func objGates(round int, store *objStore, cfg objgate.Config) [2]*objgate.Gate {
	cfg.Client, cfg.Bucket, cfg.ReceiptsHeld = store, "sim", objReceiptsHeld
	var gs [2]*objgate.Gate
	for i := range gs {
		g, err := objgate.Open(context.Background(), cfg)
		if err != nil {
			panic(fmt.Sprintf("sim: objgate, round %d: %v", round, err))
		}
		gs[i] = g
	}
	return gs
}

func (a *objAdapter) apply(m *gate.Mutation, caller string, business func()) (gate.Receipt, error) {
	ctx := context.Background()
	a.writes++
	content := fmt.Appendf(nil, "%s fence %d segment %d, write %d", m.OperationID, m.FenceToken, m.SegmentSeq, a.writes)
	rc, err := a.gates[a.pick.IntN(len(a.gates))].Apply(ctx, caller, m, func(context.Context, objgate.Current) ([]byte, error) {
		return content, nil
	})
	held, rerr := a.gates[0].Read(ctx, m.Resource)
	if rerr != nil {
		panic("sim: objgate read: " + rerr.Error())
	}
	stood := bytes.Equal(held, content)
	if err != nil && gate.OutcomeOf(err) == "" { // the store failed, not the write
		if a.store.faults == nil {
			panic("sim: objgate store error without store faults: " + err.Error())
		}
		if !stood {
			return gate.Receipt{}, fmt.Errorf("%w: %v (nothing committed)", errAnswerLost, err)
		}
		got, qerr := a.gates[0].ReceiptAt(ctx, m.Resource, m.FenceToken, m.SegmentSeq)
		if qerr != nil || got == nil {
			panic(fmt.Sprintf("sim: the content of fence %d segment %d stood without its receipt: %v", m.FenceToken, m.SegmentSeq, qerr))
		}
		business()
		return *got, fmt.Errorf("%w: %v (committed)", errAnswerLost, err)
	}
	switch {
	case err == nil && !stood:
		panic(fmt.Sprintf("sim: objgate answered %s but the bucket holds %q", rc.Outcome, held))
	case err != nil && stood:
		panic("sim: objgate refused a write whose content the bucket holds: " + err.Error())
	case stood:
		business()
	}
	return rc, err
}

// applyJob runs a job at the hop's target, a memgate, against the
// upstream receipts in the bucket.
func (a *objAdapter) applyJob(hop string, j *gate.Job, business func()) (gate.Receipt, error) {
	return a.jobs.g.ApplyJob(context.Background(), hop, j, a.gates[a.pick.IntN(len(a.gates))], func() error { business(); return nil })
}

// state reads the stored manifest (gate 0 and 1 read the same bucket).
func (a *objAdapter) state(resource string) gate.FenceState {
	st, err := a.gates[0].State(context.Background(), resource)
	if err != nil {
		panic("sim: objgate state: " + err.Error())
	}
	return st
}

func (a *objAdapter) query(resource, op string, fence uint64) gate.Answer {
	ans, err := a.gates[a.pick.IntN(len(a.gates))].QueryOperation(context.Background(), resource, op, fence)
	if err != nil {
		panic("sim: objgate query: " + err.Error())
	}
	return ans
}

func (a *objAdapter) resume(resource string, floor uint64) error {
	return a.gates[a.pick.IntN(len(a.gates))].Resume(context.Background(), resource, floor, "operator", "simulated: registry floor raised")
}
