// This file runs the end-to-end scenarios (lost acquire response, lost
// renewal, pause past TTL, each MUTATION_UNKNOWN branch) against a real
// registry on the memory store and a real gate on SQLite;
// testkit/clienttest/etcd_test.go runs the same scenarios on embedded
// etcd.
package client_test

import (
	"testing"

	"github.com/fencegate/fencegate/testkit/clienttest"
)

func TestScenariosOnMemoryStore(t *testing.T) {
	clienttest.RunScenarios(t, nil)
}
