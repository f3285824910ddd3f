// Tests the checks every /v1 call shares, in order: method (405), identity
// (401, before the body is read or the store is touched), admin (403),
// body size (413) and strict decoding (400 BAD_REQUEST), each answered as
// JSON {code, message}.
package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/wire"
)

// raw sends one request, declared as JSON when it is a POST or has a
// body, and returns the status and the decoded error body.
func (h *harness) raw(method, path, tok, body string) (int, wire.ErrorBody, http.Header) {
	h.t.Helper()
	ctype := ""
	if method == http.MethodPost || body != "" {
		ctype = "application/json"
	}
	return h.rawAs(method, path, tok, ctype, body)
}

// rawAs is raw with the Content-Type ctype ("": none).
func (h *harness) rawAs(method, path, tok, ctype, body string) (int, wire.ErrorBody, http.Header) {
	h.t.Helper()
	status, b, header := h.exchange(method, path, tok, ctype, body)
	var eb wire.ErrorBody
	if status != http.StatusOK {
		if err := json.Unmarshal(b, &eb); err != nil {
			h.t.Fatalf("%s %s: %d body %q is not JSON {code, message}: %v", method, path, status, b, err)
		}
	}
	return status, eb, header
}

// exchange sends body to path as tok ("": no Authorization) with the
// Content-Type ctype ("": none) and returns the status, the whole body
// and the headers.
func (h *harness) exchange(method, path, tok, ctype, body string) (int, []byte, http.Header) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return resp.StatusCode, b, resp.Header
}

func TestRefusedBeforeTheRegistry(t *testing.T) {
	h := newHarness(t)
	good := `{"resource":"inv/1","operationId":"op-1","operationClass":"settle","requestId":"r-1"}`
	cases := []struct {
		name, method, path, tok, body string
		status                        int
		code, msg                     string
	}{
		{"no identity", "POST", "/v1/acquire", "", good, 401, wire.CodeUnauthenticated, "no credentials"},
		{"no identity on GET", "GET", "/v1/requests/r-1", "", "", 401, wire.CodeUnauthenticated, "no credentials"},
		{"no identity on admin", "POST", "/v1/admin/floor", "", `{}`, 401, wire.CodeUnauthenticated, "no credentials"},
		{"unknown token", "POST", "/v1/acquire", "nobody-token-0123456789", good, 401, wire.CodeUnauthenticated, "unknown bearer token"},
		{"not admin", "POST", "/v1/admin/revoke-epochs", tokAlice, `{"below":2}`, 403, wire.CodeForbidden, "alice is not an admin"},
		{"not admin policy", "POST", "/v1/admin/policy", tokBob, `{"resource":"inv/1","generation":2}`, 403, wire.CodeForbidden, "not an admin"},
		{"not admin floor", "POST", "/v1/admin/floor", tokBob, `{"resource":"inv/1","fence":9}`, 403, wire.CodeForbidden, "not an admin"},
		{"not admin resource", "POST", "/v1/admin/resource", tokBob, `{"resource":"inv/1"}`, 403, wire.CodeForbidden, "not an admin"},
		{"wrong method", "GET", "/v1/acquire", tokAlice, "", 405, wire.CodeMethodNotAllowed, "wants POST"},
		{"no such endpoint", "POST", "/v1/steal", tokAlice, good, 404, wire.CodeNotFound, "no endpoint"},
		{"unknown field", "POST", "/v1/acquire", tokAlice, `{"resource":"inv/1","fence":7}`, 400, wire.CodeBadRequest, `unknown field "fence"`},
		{"case variant", "POST", "/v1/acquire", tokAlice, `{"Resource":"inv/1"}`, 400, wire.CodeBadRequest, `unknown field "Resource"`},
		{"duplicate field", "POST", "/v1/renew", tokAlice, `{"resource":"inv/1","lease":"a","lease":"b"}`, 400, wire.CodeBadRequest, "given twice"},
		{"trailing data", "POST", "/v1/release", tokAlice, `{"resource":"inv/1","lease":"a"}{}`, 400, wire.CodeBadRequest, "trailing"},
		{"wrong type", "POST", "/v1/acquire", tokAlice, `{"resource":"inv/1","ttlMs":"10"}`, 400, wire.CodeBadRequest, "ttlMs"},
		{"negative", "POST", "/v1/admin/floor", tokAdmin, `{"resource":"inv/1","fence":-1}`, 400, wire.CodeBadRequest, "fence"},
		{"array", "POST", "/v1/status", tokAlice, `[]`, 400, wire.CodeBadRequest, "want a JSON object"},
		{"empty body", "POST", "/v1/acquire", tokAlice, ``, 400, wire.CodeBadRequest, "bad request"},
		{"body on GET", "GET", "/v1/requests/r-1", tokAlice, `{}`, 400, wire.CodeBadRequest, "no body"},
		{"too large", "POST", "/v1/acquire", tokAlice, `{"resource":"` + strings.Repeat("a", RequestBytesMax) + `"}`, 413, wire.CodeTooLarge, "limit 65536 bytes"},
		{"bad grant text", "POST", "/v1/status", tokAlice, `{"grant":"schema: lockGrant.v1\n"}`, 400, "MALFORMED", "grant: malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := h.store.calls.Load()
			status, eb, hdr := h.raw(c.method, c.path, c.tok, c.body)
			if status != c.status || eb.Code != c.code || !strings.Contains(eb.Message, c.msg) {
				t.Fatalf("got %d %+v, want %d %s containing %q", status, eb, c.status, c.code, c.msg)
			}
			if !strings.HasPrefix(eb.Message, "httpapi: ") && !strings.HasPrefix(eb.Message, "grant: ") {
				t.Errorf("message %q does not start with its package", eb.Message)
			}
			if n := h.store.calls.Load() - before; n != 0 {
				t.Errorf("refused request made %d store calls", n)
			}
			if status == 401 && hdr.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

func TestHealthz(t *testing.T) {
	h := newHarness(t)
	for _, path := range []string{"/healthz", "/metrics"} {
		resp, err := h.srv.Client().Get(h.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d without any identity, want 200", path, resp.StatusCode)
		}
	}
}
