// Proves the resume path end to end without a browser: a real gate paused
// by two grants at one fence reports it; the page shows it; an admin's
// resume is refused until the registry's floor covers it, each action
// needs its confirmation token and the typed confirmation; the queued
// command reaches the gate in the answer to its next report, the gate
// resumes and records it itself, and the outcome comes back to the page
// and to the audit log. The negative control signs the command with a key
// the gate does not trust: the gate rejects it and stays paused.
package dashboard_test

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// pause makes the gate accept fence 2 and then see another grant at
// fence 2: FENCE_REGRESSION, resource paused.
func (h *harness) pause(log *report.Log) {
	h.t.Helper()
	for i, lease := range []string{"l2", "l2-again"} {
		w := gatetest.Writer{Resource: resource, Owner: "worker-1", Lease: lease, OperationID: "op-" + lease, Fence: 2}
		m := h.iss.Mutation(w, 1, lease)
		_, err := h.gate.Run(h.ctx, h.db, "worker-1", m, func(context.Context, *sql.Tx) error { return nil })
		log.Note("worker-1", m, err)
		if want := []error{nil, gate.ErrFenceRegression}[i]; !errors.Is(err, want) && !(want == nil && err == nil) {
			h.t.Fatalf("write %s: %v, want %v", lease, err, want)
		}
	}
}

var tokenField = regexp.MustCompile(`name="token" value="([^"]+)"`)

// confirmAs posts an action to /ui/confirm and returns the status, the
// page and the token it carries.
func (h *harness) confirmAs(tok string, form url.Values) (int, string, string) {
	h.t.Helper()
	code, body, _ := h.do(http.MethodPost, "/ui/confirm", tok, form)
	m := tokenField.FindStringSubmatch(body)
	if m == nil {
		return code, body, ""
	}
	return code, body, strings.ReplaceAll(m[1], "&#43;", "+")
}

// act confirms form with the confirmation typed, and returns the
// redirect's action ID.
func (h *harness) act(form url.Values, typed string) string {
	h.t.Helper()
	code, body, tok := h.confirmAs(tokAdmin, form)
	if code != http.StatusOK || tok == "" {
		h.t.Fatalf("confirm %v: %d\n%s", form, code, body)
	}
	f := cloneForm(form)
	f.Set("token", tok)
	f.Set("confirm", typed)
	code, body, hdr := h.do(http.MethodPost, "/ui/act", tokAdmin, f)
	loc, err := url.Parse(hdr.Get("Location"))
	if code != http.StatusSeeOther || err != nil || loc.Query().Get("action") == "" {
		h.t.Fatalf("act %v: %d %q\n%s", form, code, hdr.Get("Location"), body)
	}
	return loc.Query().Get("action")
}

func cloneForm(f url.Values) url.Values {
	c := url.Values{}
	for k, v := range f {
		c[k] = append([]string(nil), v...)
	}
	return c
}

func resumeForm(floor string) url.Values {
	return url.Values{"kind": {"gate-resume"}, "gate": {"gate-1"}, "resource": {resource}, "value": {floor}, "note": {"INC-42: regression"}}
}

func TestResumeFromThePage(t *testing.T) {
	h := newHarness(t, nil)
	h.openGate()
	log := report.NewLog(h.clk)
	r := h.reporter(log)
	h.pause(log)
	h.send(r)
	if p := h.page(); !strings.Contains(p, resource+" is PAUSED at gate gate-1") || !strings.Contains(p, `data-outcome="FENCE_REGRESSION"`) {
		t.Fatalf("the page does not show the pause:\n%s", p)
	}

	// Refused while the registry's next fence would not be above the floor.
	if code, body, tok := h.confirmAs(tokAdmin, resumeForm("3")); code != http.StatusBadRequest || tok != "" || !strings.Contains(body, "raise the registry&#39;s floor to at least 3 first") {
		t.Fatalf("resume before the floor: %d token %q\n%s", code, tok, body)
	}
	floor := url.Values{"kind": {"raise-floor"}, "resource": {resource}, "value": {"3"}, "note": {"INC-42"}}
	_, _, tok := h.confirmAs(tokAdmin, floor)
	for name, f := range map[string]url.Values{
		"no token":               {"kind": {"raise-floor"}, "resource": {resource}, "value": {"3"}, "note": {"INC-42"}, "confirm": {resource}},
		"token of another value": {"kind": {"raise-floor"}, "resource": {resource}, "value": {"30"}, "note": {"INC-42"}, "confirm": {resource}, "token": {tok}},
	} {
		if code, _, _ := h.do(http.MethodPost, "/ui/act", tokAdmin, f); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, code)
		}
	}
	wrong := cloneForm(floor)
	wrong.Set("token", tok)
	wrong.Set("confirm", "yes")
	if code, body, _ := h.do(http.MethodPost, "/ui/act", tokAdmin, wrong); code != http.StatusBadRequest || !strings.Contains(body, "to confirm") {
		t.Errorf("mistyped confirmation: %d\n%s", code, body)
	}
	if ri, _ := h.reg.Resource(h.ctx, resource); ri.Floor != 0 {
		t.Fatalf("the floor moved before a confirmed action: %d", ri.Floor)
	}
	h.act(floor, resource)
	if ri, _ := h.reg.Resource(h.ctx, resource); ri.Floor != 3 {
		t.Fatalf("floor after the confirmed raise: %d, want 3", ri.Floor)
	}

	id := h.act(resumeForm("3"), resource)
	if !strings.Contains(h.logs.String(), `msg="admin action" audit=true operator=ops-admin action=gate-resume resource=`+resource+` value=3 note="INC-42: regression" outcome=queued gate=gate-1 command=`+id+` via=dashboard`) {
		t.Errorf("the queued resume is not audited:\n%s", h.logs)
	}
	h.send(r) // the gate picks the command up and applies it
	st, err := h.gate.State(h.ctx, h.db, resource)
	if err != nil || st.Paused || st.Floor != 3 {
		t.Fatalf("gate after the command: %+v, %v", st, err)
	}
	acts, _ := h.gate.OperatorActions(h.ctx, h.db, resource, 1)
	if len(acts) != 1 || acts[0].Operator != "ops-admin" || !strings.Contains(acts[0].Detail, "INC-42: regression (dashboard command "+id+")") {
		t.Errorf("the gate's own record: %+v", acts)
	}
	h.send(r) // and reports the outcome
	if p := h.page(); !strings.Contains(p, `data-id="`+id+`" data-kind="gate-resume" data-state="applied"`) {
		t.Errorf("the page does not show the applied resume:\n%s", p)
	}
	if !strings.Contains(h.logs.String(), `command=`+id+` outcome=applied message="resumed `+resource+` with floor 3" via=dashboard`) {
		t.Errorf("the outcome is not audited:\n%s", h.logs)
	}
}

// TestResumeSignedByAnotherKeyIsRejected is the negative control: the
// same flow with a dashboard whose signer the gate does not trust.
func TestResumeSignedByAnotherKeyIsRejected(t *testing.T) {
	h := newHarness(t, gatetest.NewIssuer("not-the-registry"))
	h.openGate()
	log := report.NewLog(h.clk)
	r := h.reporter(log)
	h.pause(log)
	h.send(r)
	h.act(url.Values{"kind": {"raise-floor"}, "resource": {resource}, "value": {"3"}, "note": {"INC-42"}}, resource)
	id := h.act(resumeForm("3"), resource)
	h.send(r)
	h.send(r)
	if st, _ := h.gate.State(h.ctx, h.db, resource); !st.Paused {
		t.Fatal("a command signed by a key the gate does not trust resumed it")
	}
	if p := h.page(); !strings.Contains(p, `data-id="`+id+`" data-kind="gate-resume" data-state="rejected"`) {
		t.Errorf("the page does not show the rejection:\n%s", p)
	}
}
