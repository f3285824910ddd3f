// This file pins what the SDK links: a worker that imports only the SDK
// (client, client/httpclient, wire) takes locks without linking the
// server (registry and its HTTP server, stores, dashboard), a database
// driver, Prometheus or telemetry. The durable reconciliation queue and
// its metrics live in client/reconcile, behind ReconcileQueue; trace
// propagation is a header hook (httpclient.WithHeaders).
package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// sdkBanned are the dependency prefixes an SDK-only program must not link.
var sdkBanned = []string{
	"modernc.org/sqlite", "github.com/jackc/pgx", "github.com/redis/", "github.com/aws/",
	"github.com/prometheus/", "go.opentelemetry.io/", "go.etcd.io/", "google.golang.org/grpc",
	"github.com/fencegate/fencegate/registry", "github.com/fencegate/fencegate/dashboard",
	"github.com/fencegate/fencegate/sim", "github.com/fencegate/fencegate/demo",
	"github.com/fencegate/fencegate/client/reconcile", "github.com/fencegate/fencegate/testkit",
}

func TestSDKLinksNoServerDatabaseOrTelemetry(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to list dependencies")
	}
	sdk := []string{"github.com/fencegate/fencegate/client", "github.com/fencegate/fencegate/client/httpclient", "github.com/fencegate/fencegate/wire"}
	out, err := exec.Command(goTool, append([]string{"list", "-deps"}, sdk...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < len(sdk) {
		t.Fatalf("go list -deps listed %d packages: the check saw nothing", len(deps))
	}
	for _, dep := range deps {
		for _, banned := range sdkBanned {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("the SDK links %s", dep)
			}
		}
	}
}
