// This file proves every outcome is exported as its own series, zeros
// included, with its count.
package gatemetrics_test

import (
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gatemetrics"
	"github.com/prometheus/client_golang/prometheus"
)

func TestCollector(t *testing.T) {
	var c gate.Counters
	c.Add(gate.Accepted)
	c.Add(gate.Accepted)
	c.Add(gate.FenceRegression)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(gatemetrics.NewCollector(&c, prometheus.Labels{"gate": "test"}))
	families, err := reg.Gather()
	if err != nil || len(families) != 1 {
		t.Fatalf("%v %v", families, err)
	}
	got := map[string]float64{}
	for _, m := range families[0].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "outcome" {
				got[l.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if len(got) != len(gate.Outcomes) {
		t.Fatalf("%d series, want %d: %v", len(got), len(gate.Outcomes), got)
	}
	for _, o := range gate.Outcomes {
		want := map[gate.Outcome]float64{gate.Accepted: 2, gate.FenceRegression: 1}[o]
		if got[string(o)] != want {
			t.Errorf("%s = %v, want %v", o, got[string(o)], want)
		}
	}
}
