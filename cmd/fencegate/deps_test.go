// This file pins that the binary links no example and no test server:
// examples are code to read and copy, free to change, and the product
// must not depend on them (what the demo runs lives in internal/demo);
// the test kits that start etcd or ZooKeeper are for tests alone.
package main

import (
	"os/exec"
	"strings"
	"testing"
)

func TestBinaryLinksNoExample(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to list dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/fencegate/fencegate/cmd/fencegate").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/fencegate/fencegate/examples/") ||
			strings.HasSuffix(dep, "/etcdtest") || strings.HasSuffix(dep, "/zktest") {
			t.Errorf("cmd/fencegate links %s", dep)
		}
	}
}
