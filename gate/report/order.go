package report

import (
	"slices"
	"strings"
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
