package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/wire"
)

// actionData is the form and confirmation pages' model.
type actionData struct {
	Viewer   viewer
	Req      request
	Facts    []string // what is true now, for the operator to check
	Warnings []string
	Error    string
	Token    string // on the confirmation page
	Links    []link // a step to take first
}

type link struct{ Href, Text string }

// parseRequest reads an action from a form or a query.
func parseRequest(r *http.Request) (request, error) {
	get := func(k string) string { return strings.TrimSpace(r.FormValue(k)) }
	q := request{Kind: get("kind"), Gate: get("gate"), Resource: get("resource"), Lease: get("lease"), Note: get("note")}
	switch q.Kind {
	case KindFloor, KindRevoke, KindResume, KindBreak:
	default:
		return q, fmt.Errorf("unknown action %q (want %s, %s, %s or %s)", q.Kind, KindFloor, KindRevoke, KindResume, KindBreak)
	}
	if v := get("value"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return q, fmt.Errorf("value %q: want a whole number", v)
		}
		q.Value = n
	}
	return q, nil
}

// permitted lets an admin through, and an identity the resource policy
// lets break a resource through to break that resource (as the API's
// POST /v1/break does); it refuses anyone else before anything else
// about an action, and records the refusal as an admin action refused
// (FORBIDDEN, or FORBIDDEN_RESOURCE for a break the policy refuses, with
// the policy's "access refused" line), naming the viewer and the kind of
// action, with the resource only when it is a valid name and no other
// value or note.
func (d *Dashboard) permitted(w http.ResponseWriter, r *http.Request) bool {
	v := viewerFrom(r.Context())
	if v.Admin {
		return true
	}
	a := &Action{Operator: v.ID, Kind: "unknown"}
	q, err := parseRequest(r)
	if err == nil {
		a.Kind = q.Kind
		if grant.ValidateResource(q.Resource) == nil {
			a.Resource = q.Resource
		}
	}
	if err == nil && q.Kind == KindBreak && a.Resource != "" {
		aerr := d.cfg.Authorizer.Authorize(v.ID, httpapi.VerbBreak, wire.RecordName(q.Resource)) // readers with their lock's rights
		if aerr == nil {
			return true
		}
		var fe *httpapi.ForbiddenError
		if errors.As(aerr, &fe) {
			httpapi.AuditRefusal(r.Context(), d.cfg.Logger, fe, r.URL.Path, "dashboard")
		}
		d.audit(r.Context(), a, aerr)
		d.fail(w, r, http.StatusForbidden, v.ID+" may not break "+q.Resource+": breaking a lock needs an admin identity (serve --admin) or a resource policy rule granting break")
		return false
	}
	d.audit(r.Context(), a, errForbidden)
	d.fail(w, r, http.StatusForbidden, v.ID+" may view this dashboard but not act: actions need an admin identity (serve --admin)")
	return false
}

// errForbidden is a viewer's action, refused.
var errForbidden = errors.New("dashboard: actions need an admin identity")

// actionRequest is the action the operator asks for; false (the answer
// written) for one not permitted or a malformed request.
func (d *Dashboard) actionRequest(w http.ResponseWriter, r *http.Request) (request, bool) {
	if !d.permitted(w, r) {
		return request{}, false
	}
	q, err := parseRequest(r)
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, err.Error())
		return request{}, false
	}
	return q, true
}

// actionForm is GET /ui/action?kind=…: the form, prefilled from the query,
// with the facts an operator needs to fill it in.
func (d *Dashboard) actionForm(w http.ResponseWriter, r *http.Request) {
	q, ok := d.actionRequest(w, r)
	if !ok {
		return
	}
	a := d.facts(r.Context(), &q, false)
	a.Viewer = viewerFrom(r.Context())
	d.render(w, http.StatusOK, "action.html", a)
}

// confirm is POST /ui/confirm: the action checked and spelled out, with a
// token for /ui/act.
func (d *Dashboard) confirm(w http.ResponseWriter, r *http.Request) {
	q, ok := d.actionRequest(w, r)
	if !ok {
		return
	}
	a := d.facts(r.Context(), &q, true)
	a.Viewer = viewerFrom(r.Context())
	if err := d.check(r.Context(), q); err != nil {
		a.Error = err.Error()
		d.render(w, http.StatusBadRequest, "action.html", a)
		return
	}
	a.Token = d.token(a.Viewer.ID, q, d.cfg.Clock.Now().UnixMilli()+ConfirmTTLMs)
	d.render(w, http.StatusOK, "confirm.html", a)
}

// act is POST /ui/act: a confirmed action, done.
func (d *Dashboard) act(w http.ResponseWriter, r *http.Request) {
	q, ok := d.actionRequest(w, r)
	if !ok {
		return
	}
	v := viewerFrom(r.Context())
	tok := r.PostFormValue("token")
	expMs, err := d.checkToken(tok, v.ID, q, d.cfg.Clock.Now().UnixMilli())
	if err != nil {
		d.fail(w, r, http.StatusForbidden, err.Error())
		return
	}
	if typed := strings.TrimSpace(r.PostFormValue("confirm")); typed != q.Confirmation() {
		a := d.facts(r.Context(), &q, true)
		a.Viewer, a.Error = v, fmt.Sprintf("type %q to confirm (you typed %q)", q.Confirmation(), typed)
		a.Token = r.PostFormValue("token")
		d.render(w, http.StatusBadRequest, "confirm.html", a)
		return
	}
	// A replay first (checking the state again would hide it: a break's
	// lock has changed hands), then the state now, then the spend.
	if err = d.used.used(tok, d.cfg.Clock.Now().UnixMilli()); err == nil {
		if err = d.check(r.Context(), q); err != nil {
			d.fail(w, r, http.StatusConflict, err.Error())
			return
		}
		err = d.used.spend(tok, expMs, d.cfg.Clock.Now().UnixMilli())
	}
	if err != nil {
		d.audit(r.Context(), &Action{Operator: v.ID, Kind: q.Kind, Gate: q.Gate, Resource: q.Resource, Lease: q.Lease, Value: q.Value, Note: q.Note}, err)
		status := http.StatusConflict
		if errors.Is(err, errTooManyConfirmations) {
			status = http.StatusServiceUnavailable
		}
		d.fail(w, r, status, err.Error())
		return
	}
	act := d.do(r.Context(), v.ID, q)
	d.used.done(tok, act.ID)
	http.Redirect(w, r, PathPrefix+"?action="+act.ID+"#actions", http.StatusSeeOther)
}

// check validates q against the registry's state now; it changes nothing.
func (d *Dashboard) check(ctx context.Context, q request) error {
	if err := checkNote(q.Note); err != nil {
		return err
	}
	if q.Value == 0 && q.Kind != KindBreak {
		return errors.New("the value must be at least 1")
	}
	if q.Kind == KindRevoke {
		return nil
	}
	if err := grant.ValidateResource(q.Resource); err != nil {
		return fmt.Errorf("resource %q: %v", q.Resource, err)
	}
	switch q.Kind {
	case KindBreak:
		_, err := d.checkBreak(ctx, q)
		return err
	case KindFloor:
		return nil
	}
	if d.cfg.Signer == nil {
		return errors.New("this registry has no key to sign commands to gates: resume at the gate (fencegate gate resume)")
	}
	if _, ok := d.gates.known(q.Gate, d.cfg.Clock.Now()); !ok {
		return fmt.Errorf("gate %q has not reported to this registry recently: it could not pick up the command", q.Gate)
	}
	ri, err := d.cfg.Registry.Resource(ctx, q.Resource)
	if err != nil {
		return fmt.Errorf("read the registry's state of %s: %w", q.Resource, err)
	}
	if next := max(ri.HighestFence, ri.Floor); next < q.Value {
		return fmt.Errorf("the registry's next fence for %s is %d, not above floor %d: raise the registry's floor to at least %d first, or the gate would trust a floor the registry does not keep",
			q.Resource, next+1, q.Value, q.Value)
	}
	return nil
}

// do performs a checked, confirmed action, records it in the page's
// action log and audits it.
func (d *Dashboard) do(ctx context.Context, operator string, q request) *Action {
	now := d.cfg.Clock.Now()
	a := &Action{ID: newID(), AtMs: now.UnixMilli(), Operator: operator, Kind: q.Kind, Gate: q.Gate, Resource: q.Resource, Lease: q.Lease, Value: q.Value, Note: q.Note}
	var err error
	switch q.Kind {
	case KindFloor:
		var ri wire.ResourceInfo
		if ri, err = d.cfg.Registry.RaiseFloor(ctx, q.Resource, q.Value); err == nil {
			a.State, a.Message = StateDone, fmt.Sprintf("floor %d; next fence %d", ri.Floor, max(ri.HighestFence, ri.Floor)+1)
		}
	case KindRevoke:
		var line uint64
		if line, err = d.cfg.Registry.RevokeEpochsBelow(ctx, q.Value); err == nil {
			a.State, a.Message = StateDone, fmt.Sprintf("epochs below %d revoked", line)
		}
	case KindResume:
		err = d.queueResume(a, now)
	case KindBreak:
		var br wire.BreakResponse
		if br, err = d.cfg.Registry.BreakAllowed(ctx, q.Resource, d.allowSetBreak(ctx, operator)); err == nil {
			a.State, a.Message = StateDone, breakMessage(q.Lease, br)
		}
	}
	if err != nil {
		a.State, a.Message, a.command = StateError, err.Error(), nil
	}
	if q.Kind != KindResume || err != nil {
		_ = d.actions.add(a, now)
	}
	d.audit(ctx, a, err)
	d.build.Lock()
	d.cached = nil // show the action at once
	d.build.Unlock()
	return a
}
