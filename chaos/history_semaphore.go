package chaos

import (
	"sort"

	"github.com/anishathalye/porcupine"

	"github.com/fencegate/fencegate/chaos/record"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// Semaphores returns the counting semaphores the history names (a slot's
// resource, or an acquire with permits), sorted.
func (h *History) Semaphores() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range h.Events {
		name, _, ok := wire.SlotOf(e.Resource)
		if !ok && e.Kind == record.KindAcquire && e.Permits > 0 {
			name, ok = e.Resource, true
		}
		if ok && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// SemaphoreOperations turns the history's semaphore events into
// operations over the semaphore model (model_semaphore.go), as
// Operations does for the exclusive model: every HELD grant on a slot
// (with the N its acquire named), every PERMITS_MISMATCH refusal, every
// renewal, release, HELD status, gate decision, floor raised and resume
// on a slot, and one restore per semaphore for each restore or
// regression of the store. Other refusals (BUSY, WAIT_TIMEOUT) change
// nothing in the model and are left out.
func (h *History) SemaphoreOperations() []porcupine.Operation {
	sems := h.Semaphores()
	if len(sems) == 0 {
		return nil
	}
	clients := map[string]int{}
	cid := func(p string) int {
		if _, ok := clients[p]; !ok {
			clients[p] = len(clients)
		}
		return clients[p]
	}
	var ops []porcupine.Operation
	add := func(e record.Event, in semInput) {
		in.proc, in.lease, in.callMs = e.Proc, e.Lease, e.CallNs/1e6
		if in.name == "" {
			in.name, in.slot, _ = wire.SlotOf(e.Resource)
		}
		in.resource = wire.SlotResource(in.name, in.slot)
		ops = append(ops, porcupine.Operation{ClientId: cid(e.Proc), Input: in, Output: e.Result, Call: e.CallNs, Return: e.RetNs})
	}
	for _, e := range h.Events {
		if forgets(e) {
			for _, s := range sems {
				add(e, semInput{opInput: opInput{kind: opRestore}, name: s})
			}
			continue
		}
		if e.Kind == record.KindAcquire && e.Permits > 0 && e.Result == semPermitsMismatch {
			add(e, semInput{opInput: opInput{kind: opGrant, outcome: e.Result}, name: e.Resource, permits: e.Permits})
			continue
		}
		if _, _, ok := wire.SlotOf(e.Resource); !ok {
			continue
		}
		var in opInput
		switch {
		case (e.Kind == record.KindAcquire || e.Kind == record.KindQuery) && e.Result == record.ResultOK && e.State == string(grant.StateHeld):
			in = opInput{kind: opGrant, fence: e.Fence, issuedMs: e.GrantIssuedMs, expiresMs: e.GrantExpiresMs}
		case e.Kind == record.KindRenew && e.Result == record.ResultOK:
			in = opInput{kind: opRenew, outcome: "ok", ttlMs: int64(e.TTLMs)}
		case e.Kind == record.KindRelease && (e.Result == record.ResultOK || e.Result == record.ResultLost):
			in = opInput{kind: opRelease, outcome: e.Result}
		case e.Kind == record.KindStatus && e.Result == record.ResultOK && e.State == string(grant.StateHeld):
			in = opInput{kind: opStatus}
		case e.Kind == record.KindDecide:
			in = opInput{kind: opDecide, fence: e.Fence, seq: e.Seq, grant: e.GrantDigest, outcome: e.Result}
		case e.Kind == record.KindRepair && e.Result == record.ResultOK:
			in = opInput{kind: opRepair, floor: e.Floor}
		case e.Kind == record.KindResume && e.Result == record.ResultOK:
			in = opInput{kind: opResume, floor: e.Floor}
		default:
			continue
		}
		add(e, semInput{opInput: in, permits: e.Permits})
	}
	return ops
}
