//go:build unix

// Proves that the example ledger on Redis and on an S3-compatible store
// (fencegate demo resledger, --report-to) shows on the registry's
// dashboard, as the SQL ledger does: serve takes the gates' reports, a
// worker writes through each, and the page shows each gate with its
// service label, the resource at the gate's highestFence, and the
// accepted decision.
package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/testkit/redistest"
	"github.com/fencegate/fencegate/testkit/s3local"
)

func TestResledgerReportsToTheDashboard(t *testing.T) {
	dir := t.TempDir()
	toks := map[string]string{"ops-admin": "rl-admin-token-01234567", "redis-gate": "rl-redis-gate-token-0123",
		"s3-gate": "rl-s3-gate-token-0123456", "worker-a": "rl-worker-a-token-012345"}
	var lines strings.Builder
	for id, tok := range toks {
		lines.WriteString(tok + " " + id + "\n")
	}
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := startServe(t, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--token-file", tokens, "--authz-open",
		"--admin", "ops-admin", "--gate-reporter", "redis-gate", "--gate-reporter", "s3-gate", "--unsafe-no-fsync")
	s3, err := s3local.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s3.Close() })
	redis := redistest.StartServer(t, redistest.Durable...)
	for _, c := range []struct{ resource, gate, label string }{
		{"redis", "redis-gate", "ledger on Redis"},
		{"s3", "s3-gate", "ledger on S3"},
	} {
		store := []string{"--redis", redis.Addr()}
		if c.resource == "s3" {
			store = []string{"--s3-endpoint", s3.URL}
		}
		led := startInProcess(t, ledgerReady, append([]string{"demo", "resledger", "--resource", c.resource, "--token-file", tokens,
			"--trust-bundle", filepath.Join(dir, "data", "trust-bundle.json"), "--report-to", reg.url, "--report-token", toks[c.gate],
			"--report-identity", c.gate, "--report-interval-ms", "500"}, store...)...)
		res := "jobs/report-" + c.resource
		if out, errOut, code := runCLI("demo", "worker", "--name", "A", "--registry", reg.url, "--ledger", led.url, "--token", toks["worker-a"],
			"--resource", res, "--set", res+"/total=100"); code != 0 {
			t.Fatalf("%s: the worker exited %d:\n%s%s", c.resource, code, out, errOut)
		}
		for _, want := range []string{`data-gate="` + c.gate + `"`, "<small>" + c.label + "</small>",
			`<tr class="gate-res" data-resource="` + res + `">`, `data-outcome="ACCEPTED" data-resource="` + res + `"`} {
			waitPage(t, reg.url, toks["ops-admin"], want)
		}
	}
}

// waitPage waits until the dashboard's live part, as token sees it,
// contains want.
func waitPage(t *testing.T, base, token, want string) {
	t.Helper()
	var body string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodGet, base+"/ui/live", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if body = string(b); strings.Contains(body, want) {
			return
		}
	}
	t.Fatalf("the dashboard never showed %s:\n%s", want, body)
}
