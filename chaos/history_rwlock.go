package chaos

import (
	"sort"

	"github.com/anishathalye/porcupine"

	"github.com/fencegate/fencegate/chaos/record"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// RWLocks returns the read/write locks the history shows used as one (a
// reader's resource, an acquire in read mode, a downgrade), sorted. To
// the registry a lock nobody reads is an exclusive lock: the exclusive
// model checks it.
func (h *History) RWLocks() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range h.Events {
		_, reader := wire.ReadOf(e.Resource)
		if !reader && e.Mode != wire.ModeRead && e.Kind != record.KindDowngrade {
			continue
		}
		if name := wire.RecordName(e.Resource); name != "" && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// rwSet is RWLocks as a set.
func (h *History) rwSet() map[string]bool {
	out := map[string]bool{}
	for _, n := range h.RWLocks() {
		out[n] = true
	}
	return out
}

// downgradeSends sums up one downgrade's sends (one request ID): the
// first send's call, and its answer, if any send got one.
type downgradeSends struct {
	callNs int64
	ok     *record.Event
	lost   bool
}

// downgrades gathers the history's downgrades by owner and request ID.
func (h *History) downgrades() map[[2]string]*downgradeSends {
	out := map[[2]string]*downgradeSends{}
	for i, e := range h.Events {
		if e.Kind != record.KindDowngrade {
			continue
		}
		k := [2]string{e.Owner, e.RequestID}
		d := out[k]
		if d == nil {
			d = &downgradeSends{callNs: e.CallNs}
			out[k] = d
		}
		switch {
		case e.Result == record.ResultOK && e.GrantDigest != "" && d.ok == nil:
			d.ok = &h.Events[i]
		case e.Result == record.ResultLost:
			d.lost = true
		}
	}
	return out
}

// RWOperations turns the history's read/write lock events into
// operations over the read/write model (model_rwlock.go), as Operations
// does for the exclusive model, every operation on the lock's name (a
// reader's resource NAME/_read is NAME's record): every HELD grant
// (a reader's when it names NAME/_read), renewal, release (ok or lost),
// HELD status, gate decision (the mode of the grant presented), floor
// raised and resume; each downgrade once, from its first send's call to
// the answer that carried the reader's grant, or, with no answer but a
// lost one, as a lost release of the write lease; and one restore per
// lock for each restore or regression of the store.
func (h *History) RWOperations() []porcupine.Operation {
	locks := h.RWLocks()
	if len(locks) == 0 {
		return nil
	}
	rw := h.rwSet()
	dgs := h.downgrades()
	clients := map[string]int{}
	cid := func(p string) int {
		if _, ok := clients[p]; !ok {
			clients[p] = len(clients)
		}
		return clients[p]
	}
	var ops []porcupine.Operation
	add := func(e record.Event, in rwInput, callNs int64) {
		in.proc, in.callMs = e.Proc, callNs/1e6
		if in.lease == "" {
			in.lease = e.Lease
		}
		if in.resource == "" {
			in.resource = wire.RecordName(e.Resource)
		}
		if in.mode == 0 {
			in.mode = rwWrite
			if _, reader := wire.ReadOf(e.Resource); reader || e.Mode == wire.ModeRead {
				in.mode = rwRead
			}
		}
		ops = append(ops, porcupine.Operation{ClientId: cid(e.Proc), Input: in, Output: e.Result, Call: callNs, Return: e.RetNs})
	}
	for i := range h.Events {
		e := h.Events[i]
		if forgets(e) {
			for _, l := range locks {
				add(e, rwInput{opInput: opInput{kind: opRestore, resource: l}}, e.CallNs)
			}
			continue
		}
		if !rw[wire.RecordName(e.Resource)] {
			continue
		}
		if e.Kind == record.KindDowngrade {
			d := dgs[[2]string{e.Owner, e.RequestID}]
			switch {
			case d.ok == &h.Events[i]:
				add(e, rwInput{opInput: opInput{kind: opDowngrade, fence: e.Fence, issuedMs: e.GrantIssuedMs, expiresMs: e.GrantExpiresMs},
					mode: rwRead, from: e.FromLease}, d.callNs)
			case d.ok == nil && d.lost && e.CallNs == d.callNs:
				add(e, rwInput{opInput: opInput{kind: opRelease, outcome: record.ResultLost, lease: e.FromLease}, mode: rwWrite}, e.CallNs)
			}
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
		add(e, rwInput{opInput: in}, e.CallNs)
	}
	return ops
}
