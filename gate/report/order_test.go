// This file proves the order every gate's report lists resources in:
// paused first, then recent writes in their order, then by name, cut at
// the limit; and the one view of a resource's state they all show.
package report_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
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

func TestViewOf(t *testing.T) {
	at := time.UnixMilli(1_780_000_000_123).UTC()
	st := gate.FenceState{Mode: gate.ModeEnforce, HighestFence: 7, LastSegmentSeq: 2, MinPolicyGeneration: 3, Paused: true,
		PausedReason: strings.Repeat("r", 2*report.TextBytesMax), Floor: 6, FloorAt: at}
	v := report.ViewOf("a/b", st)
	want := report.ResourceView{Resource: "a/b", Mode: "enforce", HighestFence: 7, LastSegmentSeq: 2, MinPolicyGeneration: 3,
		Paused: true, PausedReason: report.Cut(st.PausedReason), Floor: 6, FloorAtMs: at.UnixMilli()}
	if v.Resource != want.Resource || v.Mode != want.Mode || v.HighestFence != 7 || v.LastSegmentSeq != 2 || v.MinPolicyGeneration != 3 ||
		!v.Paused || v.PausedReason != want.PausedReason || len(v.PausedReason) > report.TextBytesMax || v.Floor != 6 || v.FloorAtMs != want.FloorAtMs {
		t.Fatalf("view %+v, want %+v", v, want)
	}
	if v := report.ViewOf("a/b", gate.FenceState{Mode: gate.ModeShadow}); v.FloorAtMs != 0 || v.Paused || v.Mode != "shadow" {
		t.Fatalf("never resumed: %+v", v)
	}
}
