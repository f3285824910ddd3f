package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fencegate/fencegate/chaos/record"
	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/wire"
)

// Repair timing: paused resources are looked for every repairPoll; a
// restore's resources that did not pause are repaired anyway once
// repairAllAfter has passed (the operator's post-restore procedure).
const (
	repairPoll     = 300 * time.Millisecond
	repairAllAfter = 20 * time.Second
	adminTimeout   = 2 * time.Second
	adminTries     = 10
)

// repairer is the operator of docs/operations.md "On FENCE_REGRESSION":
// for a paused resource it raises the registry's floor above
// highestFence, raises the policy generation at the registry and the gate
// (so the regressed grants are POLICY_STALE), and resumes the gate. Every
// step is recorded, so the checker knows when a registry regression was
// still open for a resource.
type repairer struct {
	e   *Env
	rec *record.Writer

	mu         sync.Mutex
	unrepaired map[string]bool // resources not repaired since the last restore
	allAt      time.Time       // when to repair the rest
	repairs    int
	resumes    int
}

func newRepairer(e *Env, rec *record.Writer) *repairer {
	return &repairer{e: e, rec: rec, unrepaired: map[string]bool{}}
}

// restored is told when a restore finished.
func (r *repairer) restored(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, res := range r.e.cfg.gated() {
		r.unrepaired[res] = true
	}
	r.allAt = time.Now().Add(repairAllAfter)
}

// run repairs paused resources until ctx ends.
func (r *repairer) run(ctx context.Context) {
	for sleepUntil(ctx, time.Now().Add(repairPoll)) {
		for _, res := range r.e.cfg.gated() {
			st, err := r.e.gate.State(ctx, r.e.db, res)
			if err == nil && st.Paused {
				r.repair(ctx, res, true)
			}
		}
		r.mu.Lock()
		var rest []string
		if !r.allAt.IsZero() && time.Now().After(r.allAt) {
			for res := range r.unrepaired {
				rest = append(rest, res)
			}
			r.allAt = time.Time{}
		}
		r.mu.Unlock()
		for _, res := range rest {
			r.repair(ctx, res, false)
		}
	}
}

// admin runs fn against the first replica that answers.
func (r *repairer) admin(ctx context.Context, fn func(context.Context, *httpclient.Client) error) error {
	var err error
	for try := range adminTries {
		c := r.e.admin[try%len(r.e.admin)]
		actx, cancel := context.WithTimeout(ctx, adminTimeout)
		err = fn(actx, c)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

// repair raises the registry's floor and policy generation for res above
// everything the gate has seen, and resumes the gate when it is paused.
func (r *repairer) repair(ctx context.Context, res string, resume bool) {
	call := record.Now()
	st, err := r.e.gate.State(ctx, r.e.db, res)
	if err != nil {
		return
	}
	var info wire.ResourceInfo
	if err := r.admin(ctx, func(c context.Context, a *httpclient.Client) (err error) { info, err = a.Resource(c, res); return }); err != nil {
		r.e.cfg.Logf("repair %s: %v", res, err)
		return
	}
	floor := max(st.HighestFence, info.HighestFence, info.Floor) + 1
	gen := max(info.PolicyGeneration, st.MinPolicyGeneration) + 1
	steps := []func(context.Context, *httpclient.Client) error{
		func(c context.Context, a *httpclient.Client) error { _, err := a.RaiseFloor(c, res, floor); return err },
		func(c context.Context, a *httpclient.Client) error {
			_, err := a.SetPolicyGeneration(c, res, gen)
			return err
		},
	}
	for _, s := range steps {
		if err := r.admin(ctx, s); err != nil {
			r.e.cfg.Logf("repair %s: %v", res, err)
			return
		}
	}
	if err := r.e.gate.SetMinPolicyGeneration(ctx, r.e.db, res, gen, adminIdentity); err != nil {
		r.e.cfg.Logf("repair %s: gate policy: %v", res, err)
		return
	}
	r.rec.Emit(record.Event{Kind: record.KindRepair, Proc: "orchestrator", CallNs: call, RetNs: record.Now(), Result: record.ResultOK,
		Resource: res, Floor: floor, PolicyGen: gen, Detail: fmt.Sprintf("gate highest %d, registry highest %d", st.HighestFence, info.HighestFence)})
	r.mu.Lock()
	delete(r.unrepaired, res)
	r.repairs++
	r.mu.Unlock()
	if !resume {
		return
	}
	call = record.Now()
	err = r.e.gate.Resume(ctx, r.e.db, res, floor, adminIdentity, "chaos: registry floor and policy raised")
	ev := record.Event{Kind: record.KindResume, Proc: "orchestrator", CallNs: call, RetNs: record.Now(), Result: record.ResultOK, Resource: res, Floor: floor}
	if err != nil {
		ev.Result, ev.Detail = "error", err.Error()
	} else {
		r.mu.Lock()
		r.resumes++
		r.mu.Unlock()
	}
	r.rec.Emit(ev)
}
