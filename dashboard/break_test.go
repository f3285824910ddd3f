// Proves the break from the page: an admin sees Break… beside a held
// resource, the form shows the holder, since when and who waits, and
// names the lease; the confirmed break ends that lease and the waiter
// holds the resource at a higher fence; it is audited as the API's break
// is (action=break, the note), with via=dashboard; the confirmation acts
// once (a replay is refused, audited, and breaks nothing). A viewer the
// policy lets break sees the button and may; a viewer it does not never
// sees it and is refused, audited. A confirmation for a lease that has
// since changed hands breaks nothing.
package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/wire"
)

// breakButton is the Break… link beside resource (html/template escapes
// the query's slash).
var breakButton = `class="button small break" href="/ui/action?kind=break&amp;resource=` + strings.ReplaceAll(resource, "/", "%2f") + `"`

// hold acquires resource for owner through the registry (TTL 30 s).
func (h *harness) hold(owner string) wire.Issued {
	h.t.Helper()
	h.seq++
	is, err := h.reg.Acquire(h.ctx, owner, wire.AcquireRequest{Resource: resource, OperationID: "op-" + owner, OperationClass: "settle",
		RequestID: "r-hold-" + owner + "-" + string(rune('a'+h.seq)), TTLMs: 30000})
	if err != nil {
		h.t.Fatal(err)
	}
	h.d.NoteResource(resource)
	return is
}

// actAs confirms form as tok and acts with the confirmation typed;
// it returns the act's status, body and the token used.
func (h *harness) actAs(tok string, form url.Values, typed string) (int, string, string) {
	h.t.Helper()
	code, body, ctok := h.confirmAs(tok, form)
	if code != http.StatusOK || ctok == "" {
		h.t.Fatalf("confirm %v: %d\n%s", form, code, body)
	}
	f := cloneForm(form)
	f.Set("token", ctok)
	f.Set("confirm", typed)
	code, body, _ = h.do(http.MethodPost, "/ui/act", tok, f)
	return code, body, ctok
}

func TestBreakFromThePage(t *testing.T) {
	h := newHarness(t, nil)
	held := h.hold("worker-1")
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	waiting := h.queue(ctx, "worker-2", resource, 1)
	h.page() // past the cache
	if _, p, _ := h.do(http.MethodGet, "/ui/", tokAdmin, nil); !strings.Contains(p, breakButton) {
		t.Fatalf("the admin is not offered Break…:\n%s", p)
	}
	code, form, _ := h.do(http.MethodGet, "/ui/action", tokAdmin, url.Values{"kind": {"break"}, "resource": {resource}})
	for _, want := range []string{"Break a lock", "held by worker-1 since", "lease " + held.Grant.Lease + ", fence 1", "1 waiting, head first: worker-2 since",
		`name="lease" id="lease" value="` + held.Grant.Lease + `"`} {
		if code != http.StatusOK || !strings.Contains(form, want) {
			t.Errorf("the break form (%d) lacks %q", code, want)
		}
	}
	f := url.Values{"kind": {"break"}, "resource": {resource}, "lease": {held.Grant.Lease}, "note": {"worker-1 hung since 02:10, INC-4411"}}
	code, body, tok := h.actAs(tokAdmin, f, resource)
	if code != http.StatusSeeOther {
		t.Fatalf("act: %d\n%s", code, body)
	}
	if err := <-waiting; err != nil {
		t.Fatalf("the waiter after the break: %v", err)
	}
	ls, err := h.reg.LockStatus(h.ctx, resource)
	if err != nil || ls.Holder == nil || ls.Holder.Owner != "worker-2" || ls.Holder.Fence != 2 {
		t.Fatalf("after the break: %+v %v, want worker-2 holding fence 2", ls.Holder, err)
	}
	audit := `msg="admin action" audit=true operator=ops-admin action=break resource=` + resource + ` value=0 note="worker-1 hung since 02:10, INC-4411" outcome=done lease=` +
		held.Grant.Lease + ` message="broke worker-1's lease ` + held.Grant.Lease + ` (fence 1); worker-2 holds it now (fence 2)" via=dashboard`
	if !strings.Contains(h.logs.String(), audit) {
		t.Errorf("the break is not audited as %s:\n%s", audit, h.logs)
	}
	if p := h.page(); !strings.Contains(p, `<td class="holder">worker-2`) || !strings.Contains(p, `data-kind="break" data-state="done"`) {
		t.Errorf("the page does not show the break and the new holder:\n%s", p)
	}

	// The same confirmation again: refused, audited, nothing broken.
	f.Set("token", tok)
	f.Set("confirm", resource)
	if code, body, _ := h.do(http.MethodPost, "/ui/act", tokAdmin, f); code != http.StatusConflict || !strings.Contains(body, "already used") {
		t.Errorf("a replayed break: %d\n%s", code, body)
	}
	if !strings.Contains(h.logs.String(), `action=break resource=`+resource+` value=0 note="worker-1 hung since 02:10, INC-4411" outcome=CONFIRMATION_USED lease=`+held.Grant.Lease) {
		t.Errorf("the replay is not audited:\n%s", h.logs)
	}
	if ls, _ := h.reg.LockStatus(h.ctx, resource); ls.Holder == nil || ls.Holder.Owner != "worker-2" {
		t.Errorf("the replay broke worker-2's lease: %+v", ls.Holder)
	}
}

func TestBreakOnlyForThoseAllowed(t *testing.T) {
	h := newHarness(t, nil)
	held := h.hold("worker-1")
	if p := h.page(); strings.Contains(p, "Break…") { // ops-viewer: see, no break
		t.Errorf("a viewer without break is offered Break…:\n%s", p)
	}
	f := url.Values{"kind": {"break"}, "resource": {resource}, "lease": {held.Grant.Lease}, "note": {"mine now"}}
	if code, body, _ := h.do(http.MethodPost, "/ui/confirm", tokViewer, f); code != http.StatusForbidden || !strings.Contains(body, "ops-viewer may not break "+resource) {
		t.Errorf("a viewer's break: %d\n%s", code, body)
	}
	for _, want := range []string{
		`msg="access refused" audit=true identity=ops-viewer verb=break resource=` + resource + ` path=/ui/confirm outcome=FORBIDDEN_RESOURCE via=dashboard`,
		`msg="admin action" audit=true operator=ops-viewer action=break resource=` + resource + ` value=0 note="" outcome=FORBIDDEN_RESOURCE lease="" via=dashboard`,
	} {
		if !strings.Contains(h.logs.String(), want) {
			t.Errorf("the refusal is not audited as %s:\n%s", want, h.logs)
		}
	}
	if ls, _ := h.reg.LockStatus(h.ctx, resource); ls.Holder == nil || ls.Holder.Lease != held.Grant.Lease {
		t.Fatalf("a viewer's refused break ended the lease: %+v", ls.Holder)
	}

	// ops-breaker: a viewer whom the policy grants break on invoice batches.
	if _, p, _ := h.do(http.MethodGet, "/ui/", tokBreak, nil); !strings.Contains(p, breakButton) {
		t.Errorf("a viewer the policy lets break is not offered Break…:\n%s", p)
	}
	if code, body, _ := h.actAs(tokBreak, f, resource); code != http.StatusSeeOther {
		t.Fatalf("ops-breaker's break: %d\n%s", code, body)
	}
	if ls, _ := h.reg.LockStatus(h.ctx, resource); ls.Holder != nil {
		t.Errorf("after ops-breaker's break: %+v, want free", ls.Holder)
	}
	if !strings.Contains(h.logs.String(), `operator=ops-breaker action=break resource=`+resource+` value=0 note="mine now" outcome=done`) {
		t.Errorf("ops-breaker's break is not audited:\n%s", h.logs)
	}
}

func TestBreakRefusedWhenTheLockChangedHands(t *testing.T) {
	h := newHarness(t, nil)
	first := h.hold("worker-1")
	f := url.Values{"kind": {"break"}, "resource": {resource}, "lease": {first.Grant.Lease}, "note": {"worker-1 hung"}}
	code, body, tok := h.confirmAs(tokAdmin, f)
	if code != http.StatusOK || tok == "" {
		t.Fatalf("confirm: %d\n%s", code, body)
	}
	if err := h.reg.Release(h.ctx, "worker-1", resource, first.Grant.Lease); err != nil { // it was not hung after all
		t.Fatal(err)
	}
	second := h.hold("worker-2")
	f.Set("token", tok)
	f.Set("confirm", resource)
	if code, body, _ := h.do(http.MethodPost, "/ui/act", tokAdmin, f); code != http.StatusConflict || !strings.Contains(body, "changed hands") {
		t.Errorf("a break confirmed for another lease: %d\n%s", code, body)
	}
	if ls, _ := h.reg.LockStatus(h.ctx, resource); ls.Holder == nil || ls.Holder.Lease != second.Grant.Lease {
		t.Errorf("worker-2's lease was broken by a confirmation made for worker-1's: %+v", ls.Holder)
	}
}
