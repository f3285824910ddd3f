// This file proves that a capability is declared, not assumed: shadow or
// enforce mode on a target without fenced-write capability is refused
// with an error naming the two allowed uses, and so is such a target that
// declares no allowed use.
package gate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/gate"
)

func TestCheckTarget(t *testing.T) {
	rows := []struct {
		spec gate.TargetSpec
		ok   bool
	}{
		{gate.TargetSpec{Name: "ledger", Capability: gate.CapabilityFencedWrite, Mode: gate.ModeEnforce}, true},
		{gate.TargetSpec{Name: "ledger", Capability: gate.CapabilityFencedWrite}, true},
		{gate.TargetSpec{Name: "payments", Capability: gate.CapabilityEffectQuery, Mode: gate.ModeEnforce}, false},
		{gate.TargetSpec{Name: "payments", Capability: gate.CapabilityEffectQuery, Mode: gate.ModeShadow, Use: gate.UseSingleWriter}, false},
		{gate.TargetSpec{Name: "flag", Capability: gate.CapabilityNone, Mode: gate.ModeEnforce, Use: gate.UseIdempotentCompensable}, false},
		{gate.TargetSpec{Name: "payments", Capability: gate.CapabilityEffectQuery}, false},
		{gate.TargetSpec{Name: "payments", Capability: gate.CapabilityEffectQuery, Use: gate.UseIdempotentCompensable}, true},
		{gate.TargetSpec{Name: "flag", Capability: gate.CapabilityNone, Use: gate.UseSingleWriter}, true},
		{gate.TargetSpec{Name: "flag", Capability: "locked=true"}, false},
	}
	for _, r := range rows {
		err := gate.CheckTarget(r.spec)
		if (err == nil) != r.ok {
			t.Fatalf("%+v: %v, want ok=%v", r.spec, err, r.ok)
		}
		if err == nil || r.spec.Capability == "locked=true" {
			continue
		}
		if !errors.Is(err, gate.ErrNoFencedWrite) {
			t.Fatalf("%+v: %v does not wrap ErrNoFencedWrite", r.spec, err)
		}
		for _, want := range []string{"single-writer", "idempotent, compensable narrow operations"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("%+v: %q does not name %q", r.spec, err, want)
			}
		}
	}
}
