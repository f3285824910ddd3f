// Proves the adapters' shared half: Resolve fills in the defaults every
// adapter documents and refuses what every adapter refuses; an Action
// creates an unseen resource in its mode, refuses without an operator or
// with a bad resource name, and records its step's first word as the
// action.
package adapter_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/adapter"
	"github.com/fencegate/fencegate/gate/internal/stored"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestResolve(t *testing.T) {
	v := gatetest.NewIssuer("adapter").Verifier
	b, err := adapter.Common{Policy: gate.Policy{Verifier: v}}.Resolve()
	if err != nil || b.Mode != gate.ModeEnforce || b.Clock != (clock.System{}) || b.Decider.Policy.StatusSkewMax != gate.StatusSkewMaxDefault {
		t.Fatalf("defaults: %+v, %v", b, err)
	}
	for name, c := range map[string]adapter.Common{
		"no verifier":  {},
		"unknown mode": {Policy: gate.Policy{Verifier: v}, DefaultMode: "off"},
	} {
		if _, err := c.Resolve(); err == nil {
			t.Errorf("%s: resolved", name)
		}
	}
}

func TestAction(t *testing.T) {
	now := time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)
	a := adapter.SetMode("res/one", "ops", gate.ModeEnforce)
	next, detail, err := a.Step(gate.FenceState{Resource: "res/one"}, false, now)
	if err != nil || next.Mode != gate.ModeEnforce || !strings.HasPrefix(detail, "set-mode") {
		t.Fatalf("set-mode on an unseen resource: %+v %q %v", next, detail, err)
	}
	if r := a.Record(detail, now); r.Kind != stored.RecordAction || r.Outcome != "set-mode" || r.Operator != "ops" || r.AtMs != now.UnixMilli() {
		t.Fatalf("record: %+v", r)
	}
	st := gate.FenceState{Resource: "res/one", Mode: gate.ModeEnforce, HighestFence: 4, Paused: true}
	if next, _, err := adapter.Resume("res/one", "ops", 9, "restore", gate.ModeShadow).Step(st, true, now); err != nil || next.Paused || next.Floor != 9 || !next.FloorAt.Equal(now) {
		t.Fatalf("resume: %+v %v", next, err)
	}
	for name, a := range map[string]adapter.Action{
		"no operator":  adapter.RaiseMinPolicy("res/one", "", 2, gate.ModeEnforce),
		"bad resource": adapter.RaiseMinPolicy("Res One", "ops", 2, gate.ModeEnforce),
	} {
		if err := a.Check("pkg"); err == nil || !strings.HasPrefix(err.Error(), "pkg: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
