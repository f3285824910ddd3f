// Proves who may see and do what on the page: no identity gets the login
// page, an identity that is neither admin nor viewer is refused, a viewer
// sees the page without any way to act and is refused every action (each
// refusal audited), a browser logs in to a server-side session whose
// random ID (never the token) is kept in an HttpOnly, SameSite=Strict
// cookie and is refused once logged out or expired, a confirmation acts
// once, a cross-origin form is refused before it is read, and the page
// carries a CSP that allows only its own embedded assets.
package dashboard_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/dashboard"
)

func TestWhoMaySeeAndAct(t *testing.T) {
	h := newHarness(t, nil)
	if code, body, _ := h.do(http.MethodGet, "/ui/", "", nil); code != http.StatusUnauthorized || !strings.Contains(body, `id="login"`) ||
		!strings.Contains(body, "fencegate serve --dev") || !strings.Contains(body, "fencegate-dev-token") {
		t.Errorf("no identity: %d, want 401 and the login form, saying what opens a --dev registry", code)
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

// cookieGet fetches path with only the cookie header given.
func (h *harness) cookieGet(path, cookie string) (int, string) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+path, nil)
	req.Header.Set("Cookie", cookie)
	resp, err := h.http.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// login logs in with tok and returns the "name=value" of its cookie.
func (h *harness) login(tok string) string {
	h.t.Helper()
	code, _, hdr := h.do(http.MethodPost, "/ui/login", "", url.Values{"token": {tok}})
	cookie := hdr.Get("Set-Cookie")
	if code != http.StatusSeeOther || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") || !strings.Contains(cookie, "Path=/ui/") {
		h.t.Fatalf("login: %d, cookie %q", code, cookie)
	}
	return strings.Split(cookie, ";")[0]
}

// TestLoginSession: the cookie holds a random session ID, never the
// token; it lets its browser in as the identity that logged in until it
// is logged out or expires, after which the same cookie is refused.
func TestLoginSession(t *testing.T) {
	h := newHarness(t, nil)
	cookie := h.login(tokViewer)
	value := strings.TrimPrefix(cookie, dashboard.CookieName+"=")
	if strings.Contains(cookie, tokViewer) || len(value) < 43 {
		t.Errorf("the cookie %q carries the token or is too short to be a random session ID", cookie)
	}
	if other := h.login(tokViewer); other == cookie {
		t.Error("two logins got one session ID")
	}
	if code, body := h.cookieGet("/ui/", cookie); code != http.StatusOK || !strings.Contains(body, "ops-viewer · read-only") {
		t.Fatalf("with the cookie: %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+"/v1/requests/r-1", nil)
	req.Header.Set("Cookie", cookie)
	if resp, err := h.http.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the session cookie is an API credential: %v %v", resp.Status, err)
	}
	code, _, hdr := h.do(http.MethodPost, "/ui/logout", "", nil) // no cookie: nothing to end, still fine
	if code != http.StatusSeeOther || !strings.Contains(hdr.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("logout without a session: %d %q", code, hdr.Get("Set-Cookie"))
	}
	req, _ = http.NewRequest(http.MethodPost, h.srv.URL+"/ui/logout", nil)
	req.Header.Set("Cookie", cookie)
	if resp, err := h.http.Do(req); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %v %v", resp.Status, err)
	}
	if code, body := h.cookieGet("/ui/", cookie); code != http.StatusUnauthorized || !strings.Contains(body, "session ended") {
		t.Errorf("the cookie after logout: %d, want 401 and the login page saying the session ended", code)
	}

	cookie = h.login(tokAdmin)
	h.clk.Advance(dashboard.SessionTTLMs*time.Millisecond - time.Millisecond)
	if code, _ := h.cookieGet("/ui/", cookie); code != http.StatusOK {
		t.Errorf("a session just before it expires: %d", code)
	}
	h.clk.Advance(time.Millisecond)
	if code, _ := h.cookieGet("/ui/", cookie); code != http.StatusUnauthorized {
		t.Errorf("a session at its expiry: %d, want 401", code)
	}
	for name, tok := range map[string]string{"worker": tokWorker, "unknown": "unknown-token-0123456", "empty": ""} {
		if code, _, hdr := h.do(http.MethodPost, "/ui/login", "", url.Values{"token": {tok}}); code != http.StatusUnauthorized || hdr.Get("Set-Cookie") != "" {
			t.Errorf("login with the %s token: %d, cookie %q", name, code, hdr.Get("Set-Cookie"))
		}
	}
}

// TestConfirmationIsSingleUse: a confirmed action replayed with the same
// confirmation token does nothing again and says why; each confirmation
// of the same action is its own token.
func TestConfirmationIsSingleUse(t *testing.T) {
	h := newHarness(t, nil)
	form := url.Values{"kind": {"raise-floor"}, "resource": {resource}, "value": {"3"}, "note": {"INC-7"}}
	_, _, tok := h.confirmAs(tokAdmin, form)
	_, _, tok2 := h.confirmAs(tokAdmin, form)
	if tok == "" || tok == tok2 {
		t.Errorf("two confirmations of one action: tokens %q and %q", tok, tok2)
	}
	f := cloneForm(form)
	f.Set("token", tok)
	f.Set("confirm", resource)
	if code, body, _ := h.do(http.MethodPost, "/ui/act", tokAdmin, f); code != http.StatusSeeOther {
		t.Fatalf("act: %d\n%s", code, body)
	}
	code, body, _ := h.do(http.MethodPost, "/ui/act", tokAdmin, f)
	if code != http.StatusConflict || !strings.Contains(body, "already used") || !strings.Contains(body, "nothing was done again") {
		t.Errorf("replayed confirmation: %d, want 409 saying it was used and nothing was done\n%s", code, body)
	}
	logs := h.logs.String()
	if n := strings.Count(logs, `action=raise-floor resource=`+resource+` value=3 note=INC-7 outcome=done via=dashboard`); n != 1 {
		t.Errorf("%d floor raises audited, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs, `action=raise-floor resource=`+resource+` value=3 note=INC-7 outcome=CONFIRMATION_USED via=dashboard`) {
		t.Errorf("the replay is not audited:\n%s", logs)
	}
	if p := h.page(); strings.Count(p, `data-kind="raise-floor"`) != 1 {
		t.Errorf("the page lists the floor raise %d times, want once", strings.Count(p, `data-kind="raise-floor"`))
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
