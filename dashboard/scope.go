package dashboard

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/registry/httpapi"
)

// The resource policy on the page (Config.Authorizer, verbs see and
// break).
//
// A viewer sees a resource, in every part of the page, only when the
// policy lets the viewer see it: its row, each gate's view of it, the
// gates' decisions and open UNKNOWN operations about it, the actions
// taken on it, and what the attention list says of it. Admins see every
// resource: their role already reads any resource (/v1/admin/resource)
// and acts on any. A gate reports only what it may see: the rest of its
// report is dropped when it arrives, each resource audited the first
// time it is dropped for that gate. A viewer the policy lets break a
// resource is offered the break beside it (admins beside every held one).

// seer answers "may id see resource?" for one rendering, asking the
// Authorizer once per resource.
type seer struct {
	auth httpapi.Authorizer
	id   string
	memo map[string]bool
}

func (s *seer) sees(resource string) bool {
	resource = rowOf(resource) // a slot is seen with its semaphore's rights, a reader's resource with its lock's, as the API authorizes them
	ok, done := s.memo[resource]
	if !done {
		ok = s.auth.Authorize(s.id, httpapi.VerbSee, resource) == nil
		s.memo[resource] = ok
	}
	return ok
}

// forViewer returns v as viewer w may see it (v itself for an admin).
func (d *Dashboard) forViewer(v *data, w viewer) *data {
	if w.Admin {
		return v
	}
	s := &seer{auth: d.cfg.Authorizer, id: w.ID, memo: map[string]bool{}}
	c := *v
	c.Resources = slices.DeleteFunc(slices.Clone(v.Resources), func(r ResourceRow) bool { return !s.sees(r.Resource) })
	for i := range c.Resources { // the break button, for those the policy lets break
		c.Resources[i].CanBreak = d.cfg.Authorizer.Authorize(w.ID, httpapi.VerbBreak, c.Resources[i].Resource) == nil
	}
	c.Gates = make([]GateView, len(v.Gates))
	for i, g := range v.Gates {
		rep := *g.Report
		rep.Resources, rep.Decisions, rep.Unknown = scopeReport(g.Report, s.sees)
		g.Report = &rep
		g.Decisions = slices.DeleteFunc(slices.Clone(g.Decisions), func(x report.Decision) bool { return !s.sees(x.Resource) })
		c.Gates[i] = g
	}
	c.Decisions = decisions(c.Gates)
	c.Actions = slices.DeleteFunc(slices.Clone(v.Actions), func(a Action) bool { return a.Resource != "" && !s.sees(a.Resource) })
	c.Attention = attention(&c, v.At.UnixMilli())
	return &c
}

// scopeReport returns copies of rep's resource views, decisions and
// UNKNOWN operations, keeping those about a resource sees allows.
func scopeReport(rep *report.Report, sees func(string) bool) ([]report.ResourceView, []report.Decision, []report.UnknownOp) {
	return slices.DeleteFunc(slices.Clone(rep.Resources), func(v report.ResourceView) bool { return !sees(v.Resource) }),
		slices.DeleteFunc(slices.Clone(rep.Decisions), func(x report.Decision) bool { return !sees(x.Resource) }),
		slices.DeleteFunc(slices.Clone(rep.Unknown), func(u report.UnknownOp) bool { return !sees(u.Resource) })
}

// scopeIncoming drops from gate's report rep what the gate may not see,
// auditing each resource the first time it is dropped for that gate.
func (d *Dashboard) scopeIncoming(ctx context.Context, gate string, rep *report.Report) {
	var dropped []string
	sees := func(resource string) bool {
		err := d.cfg.Authorizer.Authorize(gate, httpapi.VerbSee, resource)
		if err != nil && resource != "" && !slices.Contains(dropped, resource) {
			dropped = append(dropped, resource)
		}
		return err == nil
	}
	rep.Resources, rep.Decisions, rep.Unknown = scopeReport(rep, sees)
	for _, r := range d.refused.first(gate, dropped) {
		var fe *httpapi.ForbiddenError
		if errors.As(d.cfg.Authorizer.Authorize(gate, httpapi.VerbSee, r), &fe) {
			httpapi.AuditRefusal(ctx, d.cfg.Logger, fe, report.ReportPath, "dashboard")
		}
	}
}

// RefusalsRememberedMax bounds the (gate, resource) pairs whose refusal
// was audited, 4096; past it the memory starts over and refusals are
// audited again.
const RefusalsRememberedMax = 4096

// refusedSet remembers which (gate, resource) refusals were audited, so
// a gate reporting every 2 s what it may not see is one audit line per
// resource, not one per report. Safe for concurrent use.
type refusedSet struct {
	mu   sync.Mutex
	seen map[[2]string]bool
}

func newRefusedSet() *refusedSet { return &refusedSet{seen: map[[2]string]bool{}} }

// first returns the resources of gate not seen before, and remembers them.
func (s *refusedSet) first(gate string, resources []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range resources {
		k := [2]string{gate, r}
		if s.seen[k] {
			continue
		}
		if len(s.seen) >= RefusalsRememberedMax {
			clear(s.seen)
		}
		s.seen[k] = true
		out = append(out, r)
	}
	return out
}
