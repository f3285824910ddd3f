// This file pins what package client links: the SDK a worker imports
// must not pull in SQLite or Prometheus (the durable reconciliation queue
// and its metrics live in client/reconcile, behind ReconcileQueue).
package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

func TestClientLinksNoDatabaseOrMetrics(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to list dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/fencegate/fencegate/client").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"modernc.org/sqlite", "github.com/prometheus/", "github.com/fencegate/fencegate/client/reconcile"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("package client links %s", dep)
			}
		}
	}
}
