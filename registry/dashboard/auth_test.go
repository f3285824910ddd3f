// Proves who may see and do what on the page: no identity gets the login
// page, an identity that is neither admin nor viewer is refused, a viewer
// sees the page without any way to act and is refused every action, a
// browser logs in with a token kept in an HttpOnly, SameSite=Strict
// cookie, a cross-origin form is refused before it is read, and the page
// carries a CSP that allows only its own embedded assets.
package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestWhoMaySeeAndAct(t *testing.T) {
	h := newHarness(t, nil)
	if code, body, _ := h.do(http.MethodGet, "/ui/", "", nil); code != http.StatusUnauthorized || !strings.Contains(body, `id="login"`) {
		t.Errorf("no identity: %d, want 401 and the login form", code)
	}
	if code, body, _ := h.do(http.MethodGet, "/ui/", "not-a-token-0123456789", nil); code != http.StatusUnauthorized || !strings.Contains(body, "bad credentials") {
		t.Errorf("bad token: %d\n%s", code, body)
	}
	if code, body, _ := h.do(http.MethodGet, "/ui/", tokWorker, nil); code != http.StatusForbidden || !strings.Contains(body, "worker-1 is neither an admin nor a viewer") {
		t.Errorf("a worker identity: %d\n%s", code, body)
	}
	code, body, hdr := h.do(http.MethodGet, "/ui/", tokViewer, nil)
	if code != http.StatusOK || !strings.Contains(body, "ops-viewer · read-only") || strings.Contains(body, `id="act"`) {
		t.Errorf("viewer's page: %d, read-only and without actions?\n%s", code, body)
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP %q", csp)
	}
	if _, body, _ := h.do(http.MethodGet, "/ui/", tokAdmin, nil); !strings.Contains(body, `id="act"`) {
		t.Error("the admin's page has no actions")
	}
	form := url.Values{"kind": {"raise-floor"}, "resource": {resource}, "value": {"3"}, "note": {"x"}, "confirm": {resource}, "token": {"1.x"}}
	for _, path := range []string{"/ui/confirm", "/ui/act"} {
		if code, body, _ := h.do(http.MethodPost, path, tokViewer, form); code != http.StatusForbidden || !strings.Contains(body, "may view this dashboard but not act") {
			t.Errorf("viewer POST %s: %d\n%s", path, code, body)
		}
	}
	if code, _, _ := h.do(http.MethodGet, "/ui/action", tokViewer, url.Values{"kind": {"raise-floor"}}); code != http.StatusForbidden {
		t.Errorf("viewer GET /ui/action: %d", code)
	}
	if ri, _ := h.reg.Resource(h.ctx, resource); ri.Floor != 0 {
		t.Errorf("a viewer moved the floor to %d", ri.Floor)
	}
}

func TestLoginCookie(t *testing.T) {
	h := newHarness(t, nil)
	code, _, hdr := h.do(http.MethodPost, "/ui/login", "", url.Values{"token": {tokViewer}})
	cookie := hdr.Get("Set-Cookie")
	if code != http.StatusSeeOther || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") || !strings.Contains(cookie, "Path=/ui/") {
		t.Fatalf("login: %d, cookie %q", code, cookie)
	}
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+"/ui/", nil)
	req.Header.Set("Cookie", strings.Split(cookie, ";")[0])
	resp, err := h.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("with the cookie: %d", resp.StatusCode)
	}
	for name, tok := range map[string]string{"worker": tokWorker, "unknown": "unknown-token-0123456", "empty": ""} {
		if code, _, hdr := h.do(http.MethodPost, "/ui/login", "", url.Values{"token": {tok}}); code != http.StatusUnauthorized || hdr.Get("Set-Cookie") != "" {
			t.Errorf("login with the %s token: %d, cookie %q", name, code, hdr.Get("Set-Cookie"))
		}
	}
}

func TestCrossOriginFormRefused(t *testing.T) {
	h := newHarness(t, nil)
	form := url.Values{"kind": {"raise-floor"}, "resource": {resource}, "value": {"3"}, "note": {"x"}}
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/ui/confirm", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+tokAdmin)
	req.Header.Set("Origin", "https://evil.example")
	resp, err := h.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin confirm: %d, want 403", resp.StatusCode)
	}
	// The same form from the page's own origin goes through.
	req, _ = http.NewRequest(http.MethodPost, h.srv.URL+"/ui/confirm", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+tokAdmin)
	req.Header.Set("Origin", h.srv.URL)
	if resp, err = h.http.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("same-origin confirm: %d, want 200", resp.StatusCode)
	}
}

func TestAssetsEmbedded(t *testing.T) {
	h := newHarness(t, nil)
	for path, want := range map[string]string{"/ui/assets/app.css": "text/css", "/ui/assets/live.js": "javascript"} {
		code, body, hdr := h.do(http.MethodGet, path, "", nil)
		if code != http.StatusOK || !strings.Contains(hdr.Get("Content-Type"), want) || len(body) < 100 {
			t.Errorf("%s: %d %q, %d bytes", path, code, hdr.Get("Content-Type"), len(body))
		}
	}
	if _, body, _ := h.do(http.MethodGet, "/ui/", tokViewer, nil); strings.Contains(body, "http://") && strings.Contains(body, "<script src=\"http") {
		t.Error("the page loads a script from elsewhere")
	}
}

// TestRefusedActionsNameTheirCaller: a viewer's attempt at an action is
// an audit line naming the viewer (each of the form, the confirmation and
// the action itself), and a gate report from an identity that may not
// report is a request line naming that identity.
func TestRefusedActionsNameTheirCaller(t *testing.T) {
	h := newHarness(t, nil)
	form := url.Values{"kind": {"raise-floor"}, "resource": {resource}, "value": {"3"}, "note": {"x"}, "confirm": {resource}, "token": {"1.x"}}
	h.do(http.MethodGet, "/ui/action", tokViewer, form)
	h.do(http.MethodPost, "/ui/confirm", tokViewer, form)
	h.do(http.MethodPost, "/ui/act", tokViewer, url.Values{"kind": {"revoke-epochs"}, "value": {"9"}, "note": {"x"}})
	want := `msg="admin action" audit=true operator=ops-viewer action=raise-floor resource=` + resource + ` value=0 note="" outcome=FORBIDDEN via=dashboard`
	if n := strings.Count(h.logs.String(), want); n != 2 {
		t.Errorf("%d audit lines %q, want 2 (the form and the confirmation):\n%s", n, want, h.logs)
	}
	if want := `operator=ops-viewer action=revoke-epochs resource="" value=0 note="" outcome=FORBIDDEN via=dashboard`; !strings.Contains(h.logs.String(), want) {
		t.Errorf("no audit line %q:\n%s", want, h.logs)
	}
	if status, code := h.post(tokWorker, minimal()); status != http.StatusForbidden || code != "FORBIDDEN" {
		t.Fatalf("a worker's report: %d %s", status, code)
	}
	if want := `msg=request method=POST path=/v1/gates/report identity=worker-1 resource="" outcome=FORBIDDEN`; !strings.Contains(h.logs.String(), want) {
		t.Errorf("no request line %q:\n%s", want, h.logs)
	}
}
