// Proves docs/operations.md's FENCE_REGRESSION runbook end to end with
// fencegate commands only: the registry's embedded etcd is restored from
// an old copy (a snapshot taken at fence 1) after the ledger has accepted
// fence 3; the next grant (fence 2 again, proven HELD) is rejected with
// FENCE_REGRESSION and pauses the resource; `fencegate gate status` shows
// it; `fencegate gate resume` is refused until `fencegate floor raise`;
// after the resume the next write is ACCEPTED under a fence above every
// fence the resource has seen; each step is recorded with its operator and
// note. As a negative control, the same restore without the floor raise
// leaves the resource paused.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	runbookWorkerToken = "runbook-worker-token-0123"
	runbookAdminToken  = "runbook-admin-token-01234"
	runbookResource    = "invoice-batch/2026-07-19"
)

// runbook is the processes of one run: a registry on a data dir and the
// example ledger with its gate admin endpoint mounted.
type runbook struct {
	t                 *testing.T
	dir, data, tokens string
	registry          *served
	ledger            *served
	ledgerDB          string
}

var ledgerReady = regexp.MustCompile(`ledger: listening on (http://[^,\s]+)`)

func newRunbook(t *testing.T) *runbook {
	dir := t.TempDir()
	rb := &runbook{t: t, dir: dir, data: filepath.Join(dir, "registry"), tokens: filepath.Join(dir, "tokens"), ledgerDB: filepath.Join(dir, "ledger.db")}
	if err := os.WriteFile(rb.tokens, []byte(runbookWorkerToken+" worker-1\n"+runbookAdminToken+" ops-admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The worker may lock invoice batches; the admin's floor raises need
	// no rule (admin calls are the admin role's).
	policy := `{"schema": "resourcePolicy.v1", "rules": [{"identities": ["worker-1"], "resources": ["invoice-batch/*"], "verbs": ["acquire", "see"]}]}`
	if err := os.WriteFile(filepath.Join(dir, "policy.json"), []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	rb.startRegistry()
	rb.ledger = startInProcess(t, ledgerReady, "demo", "ledger", "--db", rb.ledgerDB, "--token-file", rb.tokens,
		"--trust-bundle", filepath.Join(rb.data, "trust-bundle.json"), "--admin", "ops-admin")
	return rb
}

func (rb *runbook) startRegistry() {
	rb.registry = startServe(rb.t, "--data-dir", rb.data, "--listen", "127.0.0.1:0", "--token-file", rb.tokens,
		"--admin", "ops-admin", "--unsafe-no-fsync", "--authz-policy", filepath.Join(rb.dir, "policy.json"))
}

func (rb *runbook) stopRegistry() {
	if code := rb.registry.stop(); code != 0 {
		rb.t.Fatalf("serve exited %d:\n%s", code, rb.registry.stderr)
	}
}

// write runs `fencegate demo worker` once and returns the outcome of its
// done event ("" for ACCEPTED) and its fence.
func (rb *runbook) write(op string) (outcome string, fence uint64) {
	rb.t.Helper()
	out, errOut, code := runCLI("demo", "worker", "--registry", rb.registry.url, "--ledger", rb.ledger.url,
		"--token", runbookWorkerToken, "--resource", runbookResource, "--op", op, "--set", "total="+op)
	m := regexp.MustCompile(`"kind":"done","msg":"[^"]*","fence":(\d+)(?:,"outcome":"([A-Z_]+)")?`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		rb.t.Fatalf("worker %s: exit %d\n%s%s", op, code, out, errOut)
	}
	fmt.Sscan(m[1], &fence)
	return m[2], fence
}

// admin runs an operator command and returns its stdout; it fails the
// test unless the exit status is want.
func (rb *runbook) admin(want int, args ...string) string {
	rb.t.Helper()
	out, errOut, code := runCLI(args...)
	if code != want {
		rb.t.Fatalf("fencegate %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out + errOut
}

// regress writes fences 1..3 with a copy of the registry's etcd taken at
// fence 1 restored in between, then the regressed fence-2 write.
func (rb *runbook) regress() {
	t := rb.t
	if o, f := rb.write("op-1"); o != "" || f != 1 {
		t.Fatalf("first write: %s fence %d", o, f)
	}
	rb.stopRegistry()
	snapshot := filepath.Join(rb.dir, "etcd-snapshot")
	copyDir(t, filepath.Join(rb.data, "etcd"), snapshot) // the backup, taken at fence 1
	rb.startRegistry()
	for i, op := range []string{"op-2", "op-3"} {
		if o, f := rb.write(op); o != "" || f != uint64(i+2) {
			t.Fatalf("%s: %s fence %d", op, o, f)
		}
	}
	rb.stopRegistry()
	if err := os.RemoveAll(filepath.Join(rb.data, "etcd")); err != nil {
		t.Fatal(err)
	}
	copyDir(t, snapshot, filepath.Join(rb.data, "etcd")) // the restore
	rb.startRegistry()
	if o, f := rb.write("op-regressed"); o != "FENCE_REGRESSION" || f != 2 {
		t.Fatalf("write after the restore: %q fence %d, want FENCE_REGRESSION under the re-issued fence 2", o, f)
	}
}

func TestRunbookFenceRegressionCLIOnly(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("restarts the registry three times")
	}
	rb := newRunbook(t)
	rb.regress()
	reg := []string{"--registry", rb.registry.url, "--token", runbookAdminToken}
	gateHTTP := []string{"--gate", rb.ledger.url, "--token", runbookAdminToken}

	// 1. See the pause (through the database here, over HTTP below).
	st := rb.admin(0, "gate", "status", runbookResource, "--db", rb.ledgerDB)
	for _, want := range []string{"highestFence:        3", "paused:              YES", "FENCE_REGRESSION fence 2",
		"next: fencegate floor raise " + runbookResource + " --above 4"} {
		if !strings.Contains(st, want) {
			t.Errorf("gate status lacks %q:\n%s", want, st)
		}
	}
	if got := rb.ledgerMetric("fencegate_gate_paused_resources"); got != "1" {
		t.Errorf("ledger /metrics: fencegate_gate_paused_resources %q while paused, want 1", got)
	}
	if o, _ := rb.write("op-while-paused"); o != "RESOURCE_PAUSED" {
		t.Fatalf("a write while paused: %q, want RESOURCE_PAUSED", o)
	}
	// 2. Resume before the floor is raised is refused, and changes nothing.
	out := rb.admin(1, append([]string{"gate", "resume", runbookResource, "--floor", "3", "--note", "too early"}, gateHTTP...)...)
	if !strings.Contains(out, "RESUME_REFUSED") || !strings.Contains(out, "floor raise") {
		t.Errorf("early resume's message:\n%s", out)
	}
	// 3. Raise the registry's floor above the highest fence the gate saw.
	out = rb.admin(0, append([]string{"floor", "raise", runbookResource, "--above", "4", "--note", "INC-7: etcd restored from the 02:00 copy"}, reg...)...)
	if !strings.Contains(out, "raised 0 → 4") || !strings.Contains(out, "next fence:       > 4") {
		t.Errorf("floor raise printed:\n%s", out)
	}
	if !strings.Contains(rb.registry.stderr.String(), `msg="admin action" audit=true operator=ops-admin action=raise-floor resource=`+runbookResource+` value=4 note="INC-7: etcd restored from the 02:00 copy" outcome=ok`) {
		t.Errorf("the registry did not audit the floor raise:\n%s", rb.registry.stderr)
	}
	// 4. Resume through the service's admin endpoint.
	out = rb.admin(0, append([]string{"gate", "resume", runbookResource, "--floor", "4", "--note", "INC-7: floor raised to 4"}, gateHTTP...)...)
	if !strings.Contains(out, "resumed "+runbookResource+": floor 4 > highestFence 3") {
		t.Errorf("resume printed:\n%s", out)
	}
	// 5. The next write is accepted above every fence the resource has seen.
	if o, f := rb.write("op-after"); o != "" || f != 5 {
		t.Fatalf("write after resume: %q fence %d, want ACCEPTED at fence 5", o, f)
	}
	if got := rb.ledgerMetric("fencegate_gate_paused_resources"); got != "0" {
		t.Errorf("ledger /metrics: fencegate_gate_paused_resources %q after resume, want 0", got)
	}
	st = rb.admin(0, append([]string{"gate", "status", runbookResource}, gateHTTP...)...)
	for _, want := range []string{"highestFence:        5", "paused:              no", "resumed with floor:  4",
		"resume by ops-admin", "note: INC-7: floor raised to 4"} {
		if !strings.Contains(st, want) {
			t.Errorf("final gate status lacks %q:\n%s", want, st)
		}
	}
}

// TestRunbookWithoutFloorRaiseStaysPaused is the negative control: skip
// the floor raise and the gate refuses to resume whatever is asked.
func TestRunbookWithoutFloorRaiseStaysPaused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("restarts the registry three times")
	}
	rb := newRunbook(t)
	rb.regress()
	rb.admin(1, "gate", "resume", runbookResource, "--floor", "3", "--note", "skip the floor", "--db", rb.ledgerDB, "--operator", "alice")
	if o, _ := rb.write("op-still-paused"); o != "RESOURCE_PAUSED" {
		t.Fatalf("without the floor raise: %q, want RESOURCE_PAUSED", o)
	}
	info := rb.admin(0, "floor", "show", runbookResource, "--registry", rb.registry.url, "--token", runbookAdminToken)
	if !strings.Contains(info, "floor:            0") {
		t.Errorf("floor show:\n%s", info)
	}
}

// ledgerMetric returns a metric's value as the ledger's /metrics prints it.
func (rb *runbook) ledgerMetric(name string) string {
	rb.t.Helper()
	resp, err := http.Get(rb.ledger.url + "/metrics")
	if err != nil {
		rb.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == name {
			return f[1]
		}
	}
	return ""
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v\n%s", from, to, err, out)
	}
}
