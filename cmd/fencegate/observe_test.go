// Proves serve's observability from outside: with --log-format json every
// API call is one request line (method, path, identity, resource,
// outcome, latency, fence); /metrics has the per-route latency histogram;
// --request-log=false turns the lines off; a bad --log-format or
// --otlp-endpoint is a usage error before anything starts.
package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/wire"
)

func TestServeRequestLogAndLatencyHistogram(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	s := startServe(t, "--data-dir", data, "--listen", "127.0.0.1:0", "--token-file", writeTokenFile(t, dir), "--unsafe-no-fsync", "--log-format", "json", "--authz-open")
	c := s.client(t, filepath.Join(data, httpapi.BundleFileName))
	is, err := c.Acquire(context.Background(), wire.AcquireRequest{Resource: "obs/one", OperationID: "op", OperationClass: "settle", RequestID: "r-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(context.Background(), "obs/one", "no-such-lease"); err == nil {
		t.Fatal("release of a wrong lease succeeded")
	}
	var lines []map[string]any
	for _, l := range strings.Split(s.stderr.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d request lines, want 2:\n%s", len(lines), s.stderr)
	}
	acq, rel := lines[0], lines[1]
	for k, want := range map[string]any{"method": "POST", "path": "/v1/acquire", "identity": "worker-1", "resource": "obs/one", "outcome": "ok", "fence": float64(is.Grant.FenceToken)} {
		if acq[k] != want {
			t.Errorf("acquire line %s = %v, want %v", k, acq[k], want)
		}
	}
	if _, ok := acq["latency_ms"].(float64); !ok {
		t.Errorf("acquire line has no latency_ms: %v", acq)
	}
	if rel["path"] != "/v1/release" || rel["outcome"] == "ok" {
		t.Errorf("refused release logged as %v", rel)
	}
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `fencegate_http_request_duration_seconds_count{code="ok",endpoint="/v1/acquire"} 1`) {
		t.Errorf("/metrics lacks the acquire latency histogram:\n%s", grepLines(string(body), "duration"))
	}
}

func TestServeRequestLogOffAndBadTelemetryFlags(t *testing.T) {
	dir := t.TempDir()
	tok := writeTokenFile(t, dir)
	s := startServe(t, "--data-dir", filepath.Join(dir, "d"), "--listen", "127.0.0.1:0", "--token-file", tok, "--unsafe-no-fsync", "--request-log=false", "--authz-open")
	if _, err := http.Get(s.url + "/v1/acquire"); err != nil {
		t.Fatal(err)
	}
	s.stop()
	if strings.Contains(s.stderr.String(), "msg=request") {
		t.Errorf("--request-log=false still logged requests:\n%s", s.stderr)
	}
	for _, bad := range [][]string{{"--log-format", "xml"}, {"--log-level", "loud"}, {"--otlp-endpoint", "collector:4318"}} {
		_, errOut, code := runCLI(append([]string{"serve", "--data-dir", filepath.Join(dir, "x"), "--token-file", tok, "--authz-open"}, bad...)...)
		if code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", bad, code, errOut)
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
