// Proves the epoch revocation from the page: the confirmation warns when
// the line would revoke the registry's own epoch and wants the epoch typed,
// the confirmed action raises the registry's line, is audited, and shows
// in the trust section; a lower line afterwards changes nothing.
package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestRevokeEpochsFromThePage(t *testing.T) {
	h := newHarness(t, nil)
	own := url.Values{"kind": {"revoke-epochs"}, "value": {"8"}, "note": {"k1 leaked"}}
	if code, body, _ := h.confirmAs(tokAdmin, own); code != http.StatusOK || !strings.Contains(body, "every grant it issues is REVOKED until it restarts") {
		t.Errorf("revoking the registry's own epoch %d: %d, no warning?\n%s", gatetest.Epoch, code, body)
	}
	form := url.Values{"kind": {"revoke-epochs"}, "value": {"5"}, "note": {"k0 leaked, INC-9"}}
	if code, body, _ := h.confirmAs(tokAdmin, form); code != http.StatusOK || !strings.Contains(body, "Type <code>5</code> to confirm") {
		t.Fatalf("confirm: %d\n%s", code, body)
	}
	h.act(form, "5")
	if line, err := h.reg.RevokeEpochsBelow(h.ctx, 0); err != nil || line != 5 { // 0 raises nothing: reads the line
		t.Fatalf("the registry's revoked line: %d, %v (want 5)", line, err)
	}
	if !strings.Contains(h.logs.String(), `msg="admin action" audit=true operator=ops-admin action=revoke-epochs resource="" value=5 note="k0 leaked, INC-9" outcome=done via=dashboard`) {
		t.Errorf("the revocation is not audited:\n%s", h.logs)
	}
	if p := h.page(); !strings.Contains(p, `id="revoked-below">5<`) {
		t.Errorf("the trust section does not show the line")
	}
	lower := url.Values{"kind": {"revoke-epochs"}, "value": {"3"}, "note": {"oops"}}
	if _, body, _ := h.confirmAs(tokAdmin, lower); !strings.Contains(body, "the line is already there: this changes nothing") {
		t.Errorf("a lower line is not flagged:\n%s", body)
	}
}
