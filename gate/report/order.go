package report

import (
	"slices"
	"strings"

	"github.com/fencegate/fencegate/gate"
)

// Order is the order every gate's report lists its resources in: paused
// resources first, then the recently written ones in recent's order, then
// the rest by name. It sorts views in place and keeps at most limit.
func Order(views []ResourceView, recent []string, limit int) []ResourceView {
	rank := func(v ResourceView) int {
		if i := slices.Index(recent, v.Resource); i >= 0 {
			return i
		}
		return len(recent)
	}
	slices.SortStableFunc(views, func(a, b ResourceView) int {
		switch {
		case a.Paused != b.Paused:
			if a.Paused {
				return -1
			}
			return 1
		case rank(a) != rank(b):
			return rank(a) - rank(b)
		}
		return strings.Compare(a.Resource, b.Resource)
	})
	return views[:min(len(views), max(limit, 0))]
}

// ViewOf is the view of a resource in state st, as every gate's report
// shows it: the state's fields, the paused reason cut to TextBytesMax,
// the instant of the last resume in Unix ms (0: never resumed). Counts,
// rows and the last action are the source's to add.
func ViewOf(resource string, st gate.FenceState) ResourceView {
	v := ResourceView{Resource: resource, Mode: string(st.Mode), HighestFence: st.HighestFence, LastSegmentSeq: st.LastSegmentSeq,
		MinPolicyGeneration: st.MinPolicyGeneration, Paused: st.Paused, PausedReason: Cut(st.PausedReason), Floor: st.Floor}
	if !st.FloorAt.IsZero() {
		v.FloorAtMs = st.FloorAt.UnixMilli()
	}
	return v
}
