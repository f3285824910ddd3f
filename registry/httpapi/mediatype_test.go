// Proves that a body not declared as JSON is refused with 415
// UNSUPPORTED_MEDIA_TYPE before it is read: a valid acquire or floor
// raise sent as text/plain, as a form or without a Content-Type (what a
// cross-site page can make a browser send without a preflight) changes
// nothing and never reaches the store, while application/json, with or
// without charset=utf-8, is served.
package httpapi

import (
	"net/http"
	"testing"

	"github.com/fencegate/fencegate/wire"
)

func TestBodyNotDeclaredJSONIsRefused(t *testing.T) {
	h := newHarness(t)
	acquire := `{"resource":"inv/1","operationId":"op-1","operationClass":"settle","requestId":"r-1"}`
	floor := `{"resource":"inv/1","fence":41,"note":"cross-site"}`
	for _, c := range []struct{ path, tok, body string }{
		{"/v1/acquire", tokAlice, acquire},
		{"/v1/admin/floor", tokAdmin, floor},
		{"/v1/admin/revoke-epochs", tokAdmin, `{"below":5}`},
	} {
		for _, ctype := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
			"multipart/form-data; boundary=x", "", "application/json; charset=latin1", "application/json; foo=bar",
			"application/jsonp", "application/json-seq", "text/json"} {
			before := h.store.calls.Load()
			status, eb, _ := h.rawAs(http.MethodPost, c.path, c.tok, ctype, c.body)
			if status != http.StatusUnsupportedMediaType || eb.Code != wire.CodeUnsupportedMediaType {
				t.Errorf("POST %s as %q: %d %+v, want 415 %s", c.path, ctype, status, eb, wire.CodeUnsupportedMediaType)
			}
			if n := h.store.calls.Load() - before; n != 0 {
				t.Errorf("POST %s as %q made %d store calls", c.path, ctype, n)
			}
		}
	}
	ri, err := h.admin.Resource(bg, "inv/1")
	if err != nil {
		t.Fatal(err)
	}
	if ri.Floor != 0 || ri.HighestFence != 0 {
		t.Fatalf("refused requests changed inv/1: floor %d, highestFence %d", ri.Floor, ri.HighestFence)
	}
	if line, err := h.admin.RevokeEpochs(bg, wire.RevokeEpochsRequest{Below: 0}); err != nil || line != 0 {
		t.Fatalf("refused revocations moved the line to %d (%v)", line, err)
	}
	for _, ctype := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON;Charset=UTF-8"} {
		if status, eb, _ := h.rawAs(http.MethodPost, "/v1/admin/floor", tokAdmin, ctype, floor); status != http.StatusOK {
			t.Errorf("floor as %q: %d %+v, want 200", ctype, status, eb)
		}
	}
}
