// Proves the checks every endpoint shares, one row per operation of
// api/openapi.yaml (an operation without a row fails, and so does a route
// the registry serves that the file lacks, the API's and the dashboard's
// report endpoint alike): every other method is 405 with Allow; without
// an identity a call is 401 (or served, for the endpoints that need none);
// a caller without the role is 403 FORBIDDEN and one the resource policy
// does not allow is 403 FORBIDDEN_RESOURCE; a body not declared as JSON is
// 415, one above the limit 413, one with an unknown field 400; the
// allowed caller is served; and every call is one request line naming the
// authenticated caller ("" only without one), none for the endpoints
// that need no identity.
package dashboard_test

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/fencegate/fencegate/dashboard"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/wire"
)

// Who an endpoint wants.
const (
	public   = "none"          // no identity needed
	anyone   = "identity"      // any authenticated identity (the policy may still refuse)
	admin    = "admin"         // serve --admin
	reporter = "gate-reporter" // serve --gate-reporter
)

// endpointRow is what one operation of api/openapi.yaml must do.
type endpointRow struct {
	method, path string
	role         string
	// verb: the resource policy's verb, asked of every caller that passes
	// the role; "" when the policy is not asked.
	verb httpapi.Verb
	// caller is allowed; denied has the role but not the verb (verb rows).
	caller, denied string
	// call returns the path and a valid body for one call by the
	// identity of token tok (setup done); nil: the row's path, no body.
	call func(h *harness, tok string) (path, body string)
	// bodyMax and unknownCode: the body limit and the code of an unknown
	// field (POST rows).
	bodyMax     int
	unknownCode string
}

// endpointRows: one row per operation in api/openapi.yaml.
func endpointRows() []endpointRow {
	const apiMax = httpapi.RequestBytesMax
	return []endpointRow{
		{method: "POST", path: "/v1/acquire", role: anyone, verb: httpapi.VerbAcquire, caller: tokWorker, denied: tokViewer, bodyMax: apiMax, unknownCode: "BAD_REQUEST",
			call: func(h *harness, _ string) (string, string) {
				return "/v1/acquire", fmt.Sprintf(`{"resource":%q,"operationId":"op","operationClass":"settle","requestId":"r-%d"}`, resource, h.next())
			}},
		{method: "POST", path: "/v1/renew", role: anyone, verb: httpapi.VerbAcquire, caller: tokWorker, denied: tokViewer, bodyMax: apiMax, unknownCode: "BAD_REQUEST",
			call: func(h *harness, _ string) (string, string) { return "/v1/renew", h.leaseBody() }},
		{method: "POST", path: "/v1/release", role: anyone, verb: httpapi.VerbAcquire, caller: tokWorker, denied: tokViewer, bodyMax: apiMax, unknownCode: "BAD_REQUEST",
			call: func(h *harness, _ string) (string, string) { return "/v1/release", h.leaseBody() }},
		{method: "POST", path: "/v1/downgrade", role: anyone, verb: httpapi.VerbAcquire, caller: tokWorker, denied: tokViewer, bodyMax: apiMax, unknownCode: "BAD_REQUEST",
			call: func(h *harness, _ string) (string, string) {
				is := h.grantTo("worker-1")
				return "/v1/downgrade", fmt.Sprintf(`{"resource":%q,"lease":%q,"requestId":"d-%d"}`, is.Grant.Resource, is.Grant.Lease, h.next())
			}},
		{method: "POST", path: "/v1/lockset/acquire", role: anyone, verb: httpapi.VerbAcquire, caller: tokWorker, denied: tokViewer, bodyMax: apiMax, unknownCode: "BAD_REQUEST",
			call: func(h *harness, _ string) (string, string) {
				n := h.next()
				return "/v1/lockset/acquire", fmt.Sprintf(`{"members":[%q,%q],"operationId":"op","operationClass":"settle","requestId":"s-%d"}`,
					fmt.Sprintf("%s.s%d.a", resource, n), fmt.Sprintf("%s.s%d.b", resource, n), n)
			}},
		{method: "POST", path: "/v1/lockset/renew", role: anyone, verb: httpapi.VerbAcquire, caller: tokWorker, denied: tokViewer, bodyMax: apiMax, unknownCode: "BAD_REQUEST",
			call: func(h *harness, _ string) (string, string) { return "/v1/lockset/renew", h.setLeasesBody() }},
		{method: "POST", path: "/v1/lockset/release", role: anyone, verb: httpapi.VerbAcquire, caller: tokWorker, denied: tokViewer, bodyMax: apiMax, unknownCode: "BAD_REQUEST",
			call: func(h *harness, _ string) (string, string) { return "/v1/lockset/release", h.setLeasesBody() }},
		{method: "POST", path: "/v1/status", role: anyone, verb: httpapi.VerbSee, caller: tokGate, denied: tokWorker, bodyMax: apiMax, unknownCode: "BAD_REQUEST",
			call: func(h *harness, _ string) (string, string) {
				is := h.grantTo("worker-1")
				b, _ := json.Marshal(wire.StatusRequest{Grant: string(is.Grant.Encode())})
				return "/v1/status", string(b)
			}},
		{method: "POST", path: "/v1/batch", role: anyone, caller: tokWorker, bodyMax: httpapi.BatchRequestBytesMax, unknownCode: "BAD_REQUEST",
			call: func(h *harness, _ string) (string, string) { // the policy is asked per operation, answered in the batch
				return "/v1/batch", `{"operations":[{"op":"renew","request":` + h.leaseBody() + `}]}`
			}},
		{method: "GET", path: "/v1/requests/{requestId}", role: anyone, verb: httpapi.VerbAcquire, caller: tokWorker, denied: tokViewer,
			call: func(h *harness, tok string) (string, string) {
				// A request of the caller's own (request IDs are scoped to
				// their owner), granted past the API so that the denied
				// caller has one too: the policy is what refuses it.
				owner := tokenIdentity[tok]
				if owner == "" {
					owner = "worker-1"
				}
				return "/v1/requests/" + h.grantTo(owner).Grant.RequestID, ""
			}},
		{method: "POST", path: "/v1/admin/revoke-epochs", role: admin, caller: tokAdmin, bodyMax: apiMax, unknownCode: "BAD_REQUEST",
			call: func(*harness, string) (string, string) {
				return "/v1/admin/revoke-epochs", `{"below":0,"note":"table"}`
			}},
		{method: "POST", path: "/v1/admin/policy", role: admin, caller: tokAdmin, bodyMax: apiMax, unknownCode: "BAD_REQUEST",
			call: func(h *harness, _ string) (string, string) {
				return "/v1/admin/policy", fmt.Sprintf(`{"resource":%q,"generation":%d,"note":"table"}`, resource, h.next())
			}},
		{method: "POST", path: "/v1/admin/floor", role: admin, caller: tokAdmin, bodyMax: apiMax, unknownCode: "BAD_REQUEST",
			call: func(h *harness, _ string) (string, string) {
				return "/v1/admin/floor", fmt.Sprintf(`{"resource":%q,"fence":%d,"note":"table"}`, resource, h.next())
			}},
		{method: "POST", path: "/v1/admin/resource", role: admin, caller: tokAdmin, bodyMax: apiMax, unknownCode: "BAD_REQUEST",
			call: func(*harness, string) (string, string) {
				return "/v1/admin/resource", `{"resource":"` + resource + `"}`
			}},
		{method: "POST", path: "/v1/admin/fence-range", role: admin, caller: tokAdmin, bodyMax: apiMax, unknownCode: "BAD_REQUEST",
			call: func(h *harness, _ string) (string, string) { // above, ahead of the clock: no wait for it
				return "/v1/admin/fence-range", fmt.Sprintf(`{"above":%d,"note":"table"}`, uint64(h.clk.Now().Unix()+100)<<32)
			}},
		{method: "GET", path: "/v1/admin/fence-range/current", role: admin, caller: tokAdmin},
		{method: "GET", path: "/v1/locks", role: anyone, caller: tokViewer,
			call: func(*harness, string) (string, string) { return "/v1/locks", "" }},
		{method: "GET", path: "/v1/locks/{resource}", role: anyone, verb: httpapi.VerbSee, caller: tokViewer, denied: tokWorker,
			call: func(*harness, string) (string, string) { return "/v1/locks/" + resource, "" }},
		{method: "POST", path: "/v1/break", role: anyone, verb: httpapi.VerbBreak, caller: tokAdmin, denied: tokWorker, bodyMax: apiMax, unknownCode: "BAD_REQUEST",
			call: func(*harness, string) (string, string) {
				return "/v1/break", `{"resource":"` + resource + `","note":"table"}`
			}},
		{method: "POST", path: report.ReportPath, role: reporter, caller: tokGate, bodyMax: report.ReportBytesMax, unknownCode: dashboard.CodeInvalid,
			call: func(h *harness, _ string) (string, string) {
				h.clk.Advance(report.ReportSpacingMsMin * time.Millisecond)
				return report.ReportPath, minimal()
			}},
		{method: "GET", path: httpapi.TrustBundlePath, role: public},
		{method: "GET", path: "/healthz", role: public},
		{method: "GET", path: "/readyz", role: public},
		{method: "GET", path: "/metrics", role: public},
	}
}

// openAPIOperations maps the "METHOD path" of every operation in
// api/openapi.yaml to the statuses its responses list.
func openAPIOperations(t *testing.T) map[string][]string {
	t.Helper()
	y, err := os.ReadFile("../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(j, &doc); err != nil {
		t.Fatal(err)
	}
	ops := map[string][]string{}
	for path, methods := range doc.Paths {
		for m, op := range methods {
			var statuses []string
			for st := range op.Responses {
				statuses = append(statuses, st)
			}
			ops[strings.ToUpper(m)+" "+path] = statuses
		}
	}
	return ops
}

// statuses are the statuses a row's checks answer, which its operation in
// api/openapi.yaml must list.
func (row endpointRow) statuses() []string {
	out := []string{"200", "405"}
	if row.role != public {
		out = append(out, "401")
	}
	if row.role == admin || row.role == reporter || row.verb != "" {
		out = append(out, "403")
	}
	if row.method == http.MethodPost {
		out = append(out, "400", "413", "415")
	}
	return out
}

func TestEveryEndpointSharesTheChecks(t *testing.T) {
	h := newHarness(t, nil)
	ops := openAPIOperations(t)
	var served []string
	for _, r := range append(h.api.Routes(), h.d.APIRoutes()...) {
		served = append(served, r.Method+" "+r.Path)
	}
	rows := map[string]endpointRow{}
	for _, r := range endpointRows() {
		rows[r.method+" "+r.path] = r
	}
	for _, op := range served {
		if _, ok := ops[op]; !ok {
			t.Errorf("the registry serves %s, which api/openapi.yaml lacks", op)
		}
	}
	for op := range rows {
		if _, ok := ops[op]; !ok {
			t.Errorf("a row for %s, which api/openapi.yaml lacks", op)
		}
	}
	names := slices.Sorted(maps.Keys(ops))
	for _, op := range names {
		if !slices.Contains(served, op) {
			t.Errorf("api/openapi.yaml describes %s, which the registry does not serve", op)
		}
		row, ok := rows[op]
		if !ok {
			t.Errorf("api/openapi.yaml's %s has no row in endpointRows: add one", op)
			continue
		}
		for _, st := range row.statuses() {
			if !slices.Contains(ops[op], st) {
				t.Errorf("api/openapi.yaml's %s does not list the %s it answers", op, st)
			}
		}
		t.Run(strings.ReplaceAll(op, "/", "_"), func(t *testing.T) { h.checkRow(t, row) })
	}
}

// tokenIdentity names the harness's tokens' identities.
var tokenIdentity = map[string]string{tokAdmin: "ops-admin", tokViewer: "ops-viewer", tokWorker: "worker-1", tokGate: "gate-1", "": ""}

func (h *harness) checkRow(t *testing.T, row endpointRow) {
	path, body := row.path, ""
	if row.call != nil {
		path, body = row.call(h, row.caller)
	}
	post := row.method == http.MethodPost
	// Methods: every other one is 405, JSON, with Allow.
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		if m == row.method {
			continue
		}
		st, code, hdr := h.call(t, m, path, row.caller, "application/json", body)
		if st != http.StatusMethodNotAllowed || code != wire.CodeMethodNotAllowed || !strings.Contains(hdr.Get("Allow"), row.method) {
			t.Errorf("%s: %d %s Allow %q, want 405 METHOD_NOT_ALLOWED allowing %s", m, st, code, hdr.Get("Allow"), row.method)
		}
	}
	if row.role == public {
		lines := h.requestLines(path)
		if st, _, _ := h.call(t, row.method, path, "", "", ""); st != http.StatusOK {
			t.Errorf("without an identity: %d, want 200", st)
		}
		if n := len(h.requestLines(path)); n != len(lines) {
			t.Errorf("an endpoint that needs no identity logged %d request lines", n-len(lines))
		}
		return
	}
	h.expect(t, "without an identity", row, "", "application/json", body, 401, wire.CodeUnauthenticated)
	if row.role == admin || row.role == reporter {
		h.expect(t, "without the role", row, tokWorker, "application/json", body, 403, wire.CodeForbidden)
	}
	if row.verb != "" {
		h.expect(t, "without the verb", row, row.denied, "application/json", body, 403, wire.CodeForbiddenResource)
	}
	if post {
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", ""} {
			h.expect(t, "as "+strconv.Quote(ct), row, row.caller, ct, body, 415, wire.CodeUnsupportedMediaType)
		}
		big := `{"resource":"` + strings.Repeat("a", row.bodyMax) + `"}`
		h.expect(t, "above the body limit", row, row.caller, "application/json", big, 413, wire.CodeTooLarge)
		h.expect(t, "with an unknown field", row, row.caller, "application/json", strings.Replace(body, "{", `{"zzUnknown":1,`, 1), 400, row.unknownCode)
		_, body = row.call(h, row.caller) // a fresh valid body (a new request ID, a higher floor)
	}
	h.expect(t, "allowed", row, row.caller, "application/json", body, 200, "")
}

// expect makes one call as tok and wants status and code, and exactly
// one new request line for it naming tok's identity.
func (h *harness) expect(t *testing.T, what string, row endpointRow, tok, ctype, body string, status int, code string) {
	t.Helper()
	path := row.path
	if row.call != nil && row.method == http.MethodGet {
		path, _ = row.call(h, tok)
	}
	if row.method == http.MethodGet {
		ctype, body = "", ""
	}
	before := h.requestLines(path)
	st, got, _ := h.call(t, row.method, path, tok, ctype, body)
	if st != status || got != code {
		t.Errorf("%s: %d %s, want %d %s", what, st, got, status, code)
	}
	lines := h.requestLines(path)
	if len(lines) != len(before)+1 {
		t.Errorf("%s: %d request lines for the call, want 1", what, len(lines)-len(before))
		return
	}
	if id := lines[len(lines)-1]; id != tokenIdentity[tok] {
		t.Errorf("%s: the request line names %q, want %q", what, id, tokenIdentity[tok])
	}
}

// call sends one request and returns its status, error code and headers.
func (h *harness) call(t *testing.T, method, path, tok, ctype, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := h.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e wire.ErrorBody
	if resp.StatusCode != http.StatusOK && json.Unmarshal(b, &e) != nil {
		t.Errorf("%s %s: %d body %q is not JSON {code, message}", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, e.Code, resp.Header
}

var requestLine = regexp.MustCompile(`msg=request method=\S+ path=(\S+) identity=("(?:[^"\\]|\\.)*"|\S*)`)

// requestLines returns the identities of the request lines for path.
func (h *harness) requestLines(path string) []string {
	var out []string
	for _, m := range requestLine.FindAllStringSubmatch(h.logs.String(), -1) {
		if m[1] != path {
			continue
		}
		id := m[2]
		if u, err := strconv.Unquote(id); err == nil {
			id = u
		}
		out = append(out, id)
	}
	return out
}

// next is a fresh number (request IDs, rising floors and generations).
func (h *harness) next() int {
	h.seq++
	return h.seq
}

// grantTo acquires resource's sibling for owner past the API, so the
// request exists whatever the policy says of owner.
func (h *harness) grantTo(owner string) wire.Issued {
	h.t.Helper()
	n := h.next()
	is, err := h.reg.Acquire(h.ctx, owner, wire.AcquireRequest{Resource: fmt.Sprintf("%s.t%d", resource, n),
		OperationID: "op", OperationClass: "settle", RequestID: fmt.Sprintf("t-%d", n)})
	if err != nil {
		h.t.Fatal(err)
	}
	return is
}

// leaseBody is a renew or release body for a fresh lease of worker-1.
// setLeasesBody is the body of a set's renewal or release: the leases of
// a lock set granted to worker-1 past the API.
func (h *harness) setLeasesBody() string {
	h.t.Helper()
	n := h.next()
	is, err := h.reg.AcquireSet(h.ctx, "worker-1", wire.LockSetRequest{Members: []string{fmt.Sprintf("%s.t%d.a", resource, n), fmt.Sprintf("%s.t%d.b", resource, n)},
		OperationID: "op", OperationClass: "settle", RequestID: fmt.Sprintf("t-%d", n)})
	if err != nil {
		h.t.Fatal(err)
	}
	var leases []string
	for _, m := range is.Members {
		leases = append(leases, fmt.Sprintf(`{"resource":%q,"lease":%q}`, m.Grant.Resource, m.Grant.Lease))
	}
	return `{"leases":[` + strings.Join(leases, ",") + `]}`
}

func (h *harness) leaseBody() string {
	is := h.grantTo("worker-1")
	return fmt.Sprintf(`{"resource":%q,"lease":%q}`, is.Grant.Resource, is.Grant.Lease)
}
