// This file proves the order every gate's report lists resources in:
// paused first, then recent writes in their order, then by name, cut at
// the limit.
package report_test

import (
	"slices"
	"testing"

	"github.com/fencegate/fencegate/gate/report"
)

func TestOrder(t *testing.T) {
	views := []report.ResourceView{{Resource: "d"}, {Resource: "c"}, {Resource: "b", Paused: true}, {Resource: "a"}, {Resource: "e"}}
	got := report.Order(views, []string{"e", "c"}, 4)
	var names []string
	for _, v := range got {
		names = append(names, v.Resource)
	}
	if want := []string{"b", "e", "c", "a"}; !slices.Equal(names, want) {
		t.Fatalf("order %v, want %v", names, want)
	}
	if n := len(report.Order(views, nil, -1)); n != 0 {
		t.Fatalf("a negative limit kept %d views", n)
	}
}
