// This file proves the memory store passes the store conformance suite.
package memstore_test

import (
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/testkit/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) registry.Store { return memstore.New() })
}
