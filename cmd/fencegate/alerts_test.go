// Proves deploy/prometheus/fencegate-alerts.yml: `promtool check rules`
// accepts it, `promtool test rules` shows each alert firing on the series
// that should fire it and silent otherwise, a weakened rule (the negative
// control) fails those tests, and every metric the rules name is one that
// fencegate really exports (a typo would make an alert that never fires).
package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/client/reconcile"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gatemetrics"
	"github.com/fencegate/fencegate/registry/httpapi"
)

const alertsDir = "../../deploy/prometheus"

func promtool(t *testing.T) string {
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("FENCEGATE_REQUIRE_PROMTOOL") == "1" {
			t.Fatal("no promtool and FENCEGATE_REQUIRE_PROMTOOL=1 (apt-get install prometheus)")
		}
		t.Skip("SKIPPING: no promtool (Debian package prometheus)")
	}
	return p
}

func TestAlertRulesPromtool(t *testing.T) {
	pt := promtool(t)
	for _, args := range [][]string{
		{"check", "rules", "fencegate-alerts.yml"},
		{"test", "rules", "fencegate-alerts.test.yml"},
	} {
		cmd := exec.Command(pt, args...)
		cmd.Dir = alertsDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Negative control: a paused-resources alert that needs 5 paused
	// resources must fail the test that expects it with one.
	dir := t.TempDir()
	rules, err := os.ReadFile(filepath.Join(alertsDir, "fencegate-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	weak := strings.Replace(string(rules), "fencegate_gate_paused_resources > 0", "fencegate_gate_paused_resources > 5", 1)
	tests, _ := os.ReadFile(filepath.Join(alertsDir, "fencegate-alerts.test.yml"))
	os.WriteFile(filepath.Join(dir, "fencegate-alerts.yml"), []byte(weak), 0o644)
	os.WriteFile(filepath.Join(dir, "fencegate-alerts.test.yml"), tests, 0o644)
	cmd := exec.Command(pt, "test", "rules", "fencegate-alerts.test.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("a weakened rule passed promtool test rules:\n%s", out)
	}
}

// exported lists the metric names fencegate's collectors describe.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	var cs []prometheus.Collector
	cs = append(cs, httpapi.NewMetrics().Registry())
	cs = append(cs, gatemetrics.NewCollector(&gate.Counters{}, nil), gatemetrics.NewStateCollector(nil, nil, nil))
	cs = append(cs, gatemetrics.NewUnknownTracker(nil).Collectors(nil)...)
	cs = append(cs, (&reconcile.Queue{}).Collectors()...)
	names := map[string]bool{}
	re := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range cs {
		ch := make(chan *prometheus.Desc, 256)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			if m := re.FindStringSubmatch(d.String()); m != nil {
				names[m[1]] = true
			}
		}
	}
	return names
}

func TestAlertRulesNameRealMetrics(t *testing.T) {
	rules, err := os.ReadFile(filepath.Join(alertsDir, "fencegate-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	have := exported(t)
	if !have["fencegate_gate_paused_resources"] || !have["fencegate_http_request_duration_seconds"] {
		t.Fatalf("the collector walk found too little: %v", have)
	}
	for _, line := range strings.Split(string(rules), "\n") {
		if !strings.Contains(line, "expr:") && !strings.HasPrefix(strings.TrimSpace(line), "(rate") {
			continue
		}
		for _, m := range regexp.MustCompile(`fencegate_[a-z_]+`).FindAllString(line, -1) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
			if !have[base] {
				t.Errorf("the rules name %s, which fencegate does not export", m)
			}
		}
	}
}
