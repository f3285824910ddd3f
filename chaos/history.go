package chaos

import (
	"path/filepath"
	"sort"

	"github.com/anishathalye/porcupine"

	"github.com/fencegate/fencegate/chaos/record"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// History is every event of a run, from every process, in call order.
type History struct {
	Events []record.Event
}

// LoadHistory reads every history file in dir.
func LoadHistory(dir string) (*History, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	h := &History{}
	for _, f := range files {
		evs, err := record.Read(f)
		if err != nil {
			return nil, err
		}
		h.Events = append(h.Events, evs...)
	}
	sort.SliceStable(h.Events, func(i, j int) bool { return h.Events[i].CallNs < h.Events[j].CallNs })
	return h, nil
}

// Operations turns the history into porcupine operations over the
// per-resource model: every HELD grant answer, every successful renewal
// and HELD status answer, every release (a lost one may take effect at
// any later instant: the model keeps it pending), every gate decision, and
// the orchestrator's restores and the regressions its watcher saw (one
// per resource: the registry's state is unknown after them), floor raises and
// resumes. Answers that change nothing in the model (refusals, lost
// renewals and status calls, grants no longer HELD) are left out, and so
// is every operation on a read/write lock (RWLocks: the read/write model
// checks those).
func (h *History) Operations(resources []string) []porcupine.Operation {
	rw := h.rwSet()
	clients := map[string]int{}
	cid := func(p string) int {
		if _, ok := clients[p]; !ok {
			clients[p] = len(clients)
		}
		return clients[p]
	}
	var ops []porcupine.Operation
	add := func(e record.Event, in opInput, ret int64) {
		in.proc, in.lease, in.callMs = e.Proc, e.Lease, e.CallNs/1e6
		if in.resource == "" {
			in.resource = e.Resource
		}
		ops = append(ops, porcupine.Operation{ClientId: cid(e.Proc), Input: in, Output: e.Result, Call: e.CallNs, Return: ret})
	}
	for _, e := range h.Events {
		if rw[wire.RecordName(e.Resource)] {
			continue
		}
		switch {
		case (e.Kind == record.KindAcquire || e.Kind == record.KindQuery) && e.Result == record.ResultOK && e.State == string(grant.StateHeld):
			add(e, opInput{kind: opGrant, fence: e.Fence, issuedMs: e.GrantIssuedMs, expiresMs: e.GrantExpiresMs}, e.RetNs)
		case e.Kind == record.KindRenew && e.Result == record.ResultOK:
			add(e, opInput{kind: opRenew, outcome: "ok", ttlMs: int64(e.TTLMs)}, e.RetNs)
		case e.Kind == record.KindRelease && e.Result == record.ResultOK:
			add(e, opInput{kind: opRelease, outcome: "ok"}, e.RetNs)
		case e.Kind == record.KindRelease && e.Result == record.ResultLost:
			// It may take effect at any later instant: the model keeps it
			// pending (stepRegistry).
			add(e, opInput{kind: opRelease, outcome: "lost"}, e.RetNs)
		case e.Kind == record.KindStatus && e.Result == record.ResultOK && e.State == string(grant.StateHeld):
			add(e, opInput{kind: opStatus}, e.RetNs)
		case e.Kind == record.KindDecide:
			add(e, opInput{kind: opDecide, fence: e.Fence, seq: e.Seq, grant: e.GrantDigest, outcome: e.Result}, e.RetNs)
		case forgets(e):
			for _, r := range resources {
				if !rw[wire.RecordName(r)] {
					add(e, opInput{kind: opRestore, resource: r}, e.RetNs)
				}
			}
		case e.Kind == record.KindRepair && e.Result == record.ResultOK:
			add(e, opInput{kind: opRepair, floor: e.Floor}, e.RetNs)
		case e.Kind == record.KindResume && e.Result == record.ResultOK:
			add(e, opInput{kind: opResume, floor: e.Floor}, e.RetNs)
		}
	}
	return ops
}

// add puts events into the history, in call order.
func (h *History) add(evs ...record.Event) {
	if len(evs) == 0 {
		return
	}
	h.Events = append(h.Events, evs...)
	sort.SliceStable(h.Events, func(i, j int) bool { return h.Events[i].CallNs < h.Events[j].CallNs })
}

// Resources returns the resources the history names, sorted.
func (h *History) Resources() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range h.Events {
		if e.Resource != "" && !seen[e.Resource] {
			seen[e.Resource] = true
			out = append(out, e.Resource)
		}
	}
	sort.Strings(out)
	return out
}

// forgets reports whether e is a moment after which the registry may
// have forgotten grants: a restore of its store, or the store going back
// by itself (a regression the watcher saw).
func forgets(e record.Event) bool {
	return (e.Kind == record.KindRestore || e.Kind == record.KindRegression) && e.Result == record.ResultOK
}

// restores returns the run's successful restores and regressions: the
// boundaries between the store's histories.
func (h *History) restores() []record.Event {
	var out []record.Event
	for _, e := range h.Events {
		if forgets(e) {
			out = append(out, e)
		}
	}
	return out
}

// era is the index of the registry history an instant (ns) belongs to:
// 0 before the first restore began, i after the i-th restore ended, and
// -1 while a restore was under way (either side).
func era(restores []record.Event, t int64) int {
	n := 0
	for _, r := range restores {
		switch {
		case t < r.CallNs:
			return n
		case t <= r.RetNs:
			return -1
		}
		n++
	}
	return n
}
