// Package python runs the Python client's own tests from `go test ./...`
// (the client is Python; this package holds only these tests). It proves:
// the Python suite passes (tests/test_*.py: the Go SDK's lease scenario
// files, client/testdata/lease, answered step for step; the golden grant
// vectors; the limits and the acquire core); an envelope the Python
// client builds is, byte for byte, the JSON of the Go gate.Mutation the Go
// SDK builds from the same registry answer, and the Go gate's strict
// decoder reads it back; and `pip install ./clients/python` works without
// the network (install_test.go); permits, lock sets and read/write locks
// work against a real registry behind the real HTTP API (permits_test.go,
// locksets_test.go), and a reader's lease is READ_GRANT at the gate
// inside a real PostgreSQL (readgrant_test.go). The real-process story
// (serve, PostgreSQL, a frozen worker) is cmd/fencegate/python_client_test.go.
package python

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/wire"
)

// python is the interpreter the tests run: Debian's (/usr/bin/python3,
// the one python3-psycopg installs for), else python3 on PATH; the
// client needs nothing but its standard library.
var python = func() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	if p, err := exec.LookPath("python3"); err == nil {
		return p
	}
	return ""
}()

// requirePython skips the test loudly without a Python 3, or fails it
// where CI requires one (FENCEGATE_REQUIRE_PSYCOPG or
// FENCEGATE_REQUIRE_PIP set to 1).
func requirePython(t *testing.T) {
	t.Helper()
	if python != "" {
		return
	}
	if os.Getenv("FENCEGATE_REQUIRE_PSYCOPG") == "1" || os.Getenv("FENCEGATE_REQUIRE_PIP") == "1" {
		t.Fatal("python3 required: neither /usr/bin/python3 nor python3 on PATH")
	}
	t.Skip("*** SKIPPING: no python3 (apt-get install python3) ***")
}

func run(t *testing.T, dir string, env []string, stdin []byte, args ...string) []byte {
	t.Helper()
	requirePython(t)
	cmd := exec.Command(python, args...)
	cmd.Dir, cmd.Stdin = dir, bytes.NewReader(stdin)
	cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3 %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	t.Logf("python3 %s (%s):\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), stderr.Bytes())
	return out
}

func TestPythonSuite(t *testing.T) {
	t.Parallel()
	run(t, ".", nil, nil, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".") // its report is on stderr, logged
}

// TestPythonSuiteCanFail is the negative control of the scenario runner:
// next to an untouched copy of a scenario (which passes), a scenario
// whose expectation is wrong, one with a command the runner does not
// know, one with a number that is not one, one missing an option, one
// with an option and one with a word their command does not take must
// each fail it — fail, not error out or skip.
func TestPythonSuiteCanFail(t *testing.T) {
	t.Parallel()
	requirePython(t)
	dir := t.TempDir()
	good, err := os.ReadFile("../../client/testdata/lease/renewal.txt")
	if err != nil {
		t.Fatal(err)
	}
	wrong := strings.Replace(string(good), "next at=1                       -> refresh", "next at=1 -> renew", 1)
	if wrong == string(good) {
		t.Fatal("renewal.txt changed: update this control")
	}
	doctored := map[string]string{"wrong": wrong, "unknown": "lease ttl=10 -> HELD\nfly at=1\n",
		"unreadable": "lease ttl=ten -> HELD\n", "nooption": "lease ttl=10 -> HELD\nnext -> none\n",
		"strayoption": "set members=2 ttl=10 colour=red -> HELD\n", "strayword": "lease write ttl=10 -> HELD\n"}
	files := map[string]string{"good": string(good)}
	for name, text := range doctored {
		files[name] = text
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name+".txt"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(python, "-m", "unittest", "-v", "tests.test_lease_scenarios")
	cmd.Env = append(os.Environ(), "FENCEGATE_LEASE_SCENARIOS="+dir, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "FAILED (failures=6)\n") || !strings.Contains(string(out), "test_good ") {
		t.Fatalf("the runner passed doctored scenarios, or did not fail each (%v):\n%s", err, out)
	}
	for name := range doctored {
		if !strings.Contains(string(out), "FAIL: test_"+name+" ") {
			t.Errorf("the runner did not fail %s.txt:\n%s", name, out)
		}
	}
	if strings.Contains(string(out), "FAIL: test_good ") {
		t.Errorf("the runner failed the untouched copy of renewal.txt:\n%s", out)
	}
}

// TestPythonRejectionsAreTheGates holds the Python client's exception
// classes to the gate's own table: every outcome but ACCEPTED
// (gate.Outcomes) has its class, whose SQLSTATE is the one the gate
// inside PostgreSQL raises (pggate.SQLState) and whose finality is
// gate.Outcome.Final; no class names an outcome the gate does not know.
func TestPythonRejectionsAreTheGates(t *testing.T) {
	t.Parallel()
	out := run(t, ".", nil, nil, "-c", `
import json
from fencegate.errors import GATE_REJECTIONS, GateRejection, is_final
import fencegate
print(json.dumps({o: [c.sqlstate, is_final(o), issubclass(c, GateRejection) and getattr(fencegate, c.__name__) is c]
                  for o, c in GATE_REJECTIONS.items()}))
`)
	var got map[string][3]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, o := range gate.Outcomes {
		if o == gate.Accepted {
			continue
		}
		want := [3]any{pggate.SQLState(o), o.Final(), true}
		if g, ok := got[string(o)]; !ok || g != want {
			t.Errorf("%s: python has [sqlstate final exported] %v, the gate %v", o, g, want)
		}
		delete(got, string(o))
	}
	if len(got) != 0 {
		t.Errorf("python classes for outcomes the gate does not have: %v", got)
	}
}

// registryClasses is what the Python client has for each registry code:
// its class's name, whether package fencegate exports that class, whether
// it is a RegistryError, its retryable, whether it is also an
// OutcomeUnknown, and the class (by name) the transport gives an answer
// with that code.
const registryClasses = `
import json, sys
import fencegate
from fencegate.errors import REGISTRY_ERRORS, OutcomeUnknown, RegistryError
from fencegate.transport import answer_error
statuses = json.load(sys.stdin)
out = {}
for code, c in REGISTRY_ERRORS.items():
    e = answer_error(statuses.get(code, 500), json.dumps({"code": code, "message": "m"}).encode())
    out[code] = {"class": c.__name__, "exported": getattr(fencegate, c.__name__, None) is c and c.__name__ in fencegate.__all__,
                 "registryError": issubclass(c, RegistryError) and c.code == code, "retryable": c.retryable,
                 "outcomeUnknown": issubclass(c, OutcomeUnknown), "answered": type(e).__name__}
print(json.dumps(out))
`

type registryClass struct {
	Class          string `json:"class"`
	Exported       bool   `json:"exported"`
	RegistryError  bool   `json:"registryError"`
	Retryable      bool   `json:"retryable"`
	OutcomeUnknown bool   `json:"outcomeUnknown"`
	Answered       string `json:"answered"`
}

// codeRow is one row of api/openapi.yaml's table of codes: "| CODE | status | words |".
var codeRow = regexp.MustCompile(`(?m)^\s*\| ([A-Z_]+) \| (\d{3}) \| (.*) \|\s*$`)

// openAPICodes reads the registry's table of codes (api/openapi.yaml,
// which registry/httpapi's TestOpenAPIListsEveryCode holds to the
// server's codes): each code's HTTP status, and whether it is answered
// with Retry-After.
func openAPICodes(t *testing.T) (status map[string]int, retryAfter map[string]bool) {
	t.Helper()
	y, err := os.ReadFile("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	status, retryAfter = map[string]int{}, map[string]bool{}
	for _, m := range codeRow.FindAllStringSubmatch(string(y), -1) {
		status[m[1]], _ = strconv.Atoi(m[2])
		retryAfter[m[1]] = strings.Contains(m[3], "(Retry-After)")
	}
	if len(status) == 0 {
		t.Fatal("api/openapi.yaml: no table of codes found")
	}
	return status, retryAfter
}

// registryClassesDiff compares the Python client's classes (got, the
// output of registryClasses) with the registry's codes: every code of
// wire.RegistryErrors has its class, exported, a RegistryError of that
// code, retryable exactly when the registry answers it with Retry-After,
// an OutcomeUnknown only for UNAVAILABLE, and the transport answers it
// with that class; no class names a code the registry does not have.
func registryClassesDiff(got map[string]registryClass, retryAfter map[string]bool) []string {
	var diffs []string
	seen := map[string]bool{}
	for _, e := range wire.RegistryErrors {
		code := e.Code()
		seen[code] = true
		g, ok := got[code]
		switch {
		case !ok:
			diffs = append(diffs, code+": no class in fencegate.errors.REGISTRY_ERRORS (it would come back as OutcomeUnknown)")
			continue
		case !g.Exported:
			diffs = append(diffs, code+": class "+g.Class+" not exported by package fencegate (__all__)")
		case !g.RegistryError:
			diffs = append(diffs, code+": class "+g.Class+" is not a RegistryError with that code")
		case g.Answered != g.Class:
			diffs = append(diffs, code+": the transport answers "+g.Answered+", not "+g.Class)
		}
		if g.Retryable != retryAfter[code] {
			diffs = append(diffs, fmt.Sprintf("%s: class %s retryable %v, the registry's Retry-After %v", code, g.Class, g.Retryable, retryAfter[code]))
		}
		if g.OutcomeUnknown != (e == wire.ErrUnavailable) {
			diffs = append(diffs, fmt.Sprintf("%s: class %s is an OutcomeUnknown: %v (only UNAVAILABLE's is)", code, g.Class, g.OutcomeUnknown))
		}
	}
	for code, g := range got {
		if !seen[code] {
			diffs = append(diffs, code+": class "+g.Class+" for a code the registry does not have")
		}
	}
	return diffs
}

func runRegistryClasses(t *testing.T, dir string, status map[string]int) map[string]registryClass {
	t.Helper()
	in, err := json.Marshal(status)
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, dir, nil, in, "-c", registryClasses)
	var got map[string]registryClass
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return got
}

// TestPythonRegistryErrorsAreTheRegistrys holds the Python client's
// registry exceptions (fencegate.errors.REGISTRY_ERRORS) to the
// registry's own table, wire.RegistryErrors, and to the Retry-After marks
// of api/openapi.yaml (registryClassesDiff says what must hold): a code
// added to the registry fails it until the client has its class.
func TestPythonRegistryErrorsAreTheRegistrys(t *testing.T) {
	t.Parallel()
	status, retryAfter := openAPICodes(t)
	for _, d := range registryClassesDiff(runRegistryClasses(t, ".", status), retryAfter) {
		t.Error(d)
	}
}

// TestPythonRegistryErrorsCanFail is its negative control: a copy of the
// package whose table lacks STORE_FULL, and one whose StoreFullError is
// not retryable, must each be reported.
func TestPythonRegistryErrorsCanFail(t *testing.T) {
	t.Parallel()
	requirePython(t)
	status, retryAfter := openAPICodes(t)
	src, err := os.ReadFile("fencegate/errors.py")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ from, to, want string }{
		"missing":      {"FenceRangeError, StoreFullError, ", "FenceRangeError, ", "STORE_FULL: no class"},
		"notRetryable": {"code = \"STORE_FULL\"\n    retryable = True", "code = \"STORE_FULL\"", "STORE_FULL: class StoreFullError retryable false"},
	} {
		doctored := strings.Replace(string(src), c.from, c.to, 1)
		if doctored == string(src) {
			t.Fatalf("%s: errors.py changed: update this control", name)
		}
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(".")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "fencegate", "errors.py"), []byte(doctored), 0o644); err != nil {
			t.Fatal(err)
		}
		diffs := registryClassesDiff(runRegistryClasses(t, dir, status), retryAfter)
		if len(diffs) != 1 || !strings.HasPrefix(diffs[0], c.want) {
			t.Errorf("%s: want one difference %q..., got %q", name, c.want, diffs)
		}
	}
}

// envelopeCase is one registry answer and the segment to build for it.
type envelopeCase struct {
	Issued      wire.IssuedResponse `json:"issued"`
	OperationID string              `json:"operationId"`
	Seq         uint64              `json:"seq"`
	Digest      string              `json:"digest"`
}

func TestPythonEnvelopesAreGoEnvelopes(t *testing.T) {
	t.Parallel()
	iss := gatetest.NewIssuer("python")
	w := gatetest.Writer{Resource: "jobs/report", Owner: "worker-a", Lease: "l7-ab12", OperationID: "op-1", Fence: 7}
	held, heldProof := iss.HeldGrant(w)
	g, gp := iss.Grant(w)
	st, sp := iss.Status(g, grant.StateHeld)
	gates := []grant.GateProof{{Gate: "ledger-db", GrantProof: "mac:ledger-db-2:AAAA", StatusProof: "mac:ledger-db-2:BBBB"}}
	digest := gate.DigestPayload([]byte(`{"resource":"jobs/report","value":"42"}`))
	cases := []envelopeCase{
		{wire.IssuedResponse{Grant: string(held.Encode()), GrantProof: heldProof, ExpiresAfterMs: 10000}, "op-1", 1, digest.String()},
		{wire.IssuedResponse{Grant: string(g.Encode()), GrantProof: gp, Status: string(st.Encode()), StatusProof: sp}, "op-1", 2, digest.String()},
		{wire.IssuedResponse{Grant: string(g.Encode()), GrantProof: gp, Status: string(st.Encode()), StatusProof: sp, GateProofs: gates}, "op-1", 9, digest.String()},
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, ".", nil, in, "-c", `
import json, sys
from fencegate.grant import Issued
from fencegate.core.lease import envelope_json
for c in json.load(sys.stdin):
    print(envelope_json(Issued.from_json(c["issued"]), c["operationId"], c["seq"], c["digest"]))
`)
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("python built %d envelopes for %d answers:\n%s", len(lines), len(cases), out)
	}
	for i, c := range cases {
		// The Go SDK's envelope (client/core: Lease.Envelope) of the same answer.
		want := gate.Mutation{Resource: w.Resource, Lease: w.Lease, OperationID: c.OperationID, FenceToken: w.Fence,
			SegmentSeq: c.Seq, PayloadDigest: digest, Grant: []byte(c.Issued.Grant), GrantProof: c.Issued.GrantProof,
			Status: []byte(c.Issued.Status), StatusProof: c.Issued.StatusProof, GateProofs: c.Issued.GateProofs}
		wantJSON, err := want.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if lines[i] != string(wantJSON) {
			t.Errorf("case %d: python built\n%s\nthe Go SDK builds\n%s", i, lines[i], wantJSON)
		}
		if _, err := gate.DecodeMutation([]byte(lines[i])); err != nil {
			t.Errorf("case %d: the gate's decoder refuses the python envelope: %v", i, err)
		}
	}
}
