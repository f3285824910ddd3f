package registry

import (
	"slices"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// Observer hears of the events only the registry sees. Each event is
// reported by the registry that committed it, once per commit, so the sum
// over replicas counts every event once.
type Observer interface {
	// Expired: a lease was found expired and ended in a commit.
	Expired()
	// Handoff: a resource that had been held before was granted again;
	// d runs from the instant it became free (a release, or an expiry plus
	// lock-delay) to the grant. A release that hands the lease straight to
	// the head waiter reports about zero.
	Handoff(d time.Duration)
}

// observe reports what the committed write w did to the record of s, as
// judged at now (the decision's instant).
func (r *Registry) observe(s *Snapshot, w *Write, now int64) {
	o := r.cfg.Observer
	if o == nil || w.Record == nil {
		return
	}
	prev, next := recordOf(s), w.Record
	if h := prev.Holder; h != nil && (next.Holder == nil || next.Holder.Grant.Lease != h.Grant.Lease) {
		for _, e := range next.Ended {
			if e.Lease == h.Grant.Lease && e.State == grant.StateExpired {
				o.Expired()
			}
		}
	}
	// A read/write lock's reader expires on its own as well.
	for _, h := range prev.Readers {
		if slices.ContainsFunc(next.Readers, func(n lockstate.Holder) bool { return n.Grant.Lease == h.Grant.Lease }) {
			continue
		}
		for _, e := range next.Ended {
			if e.Lease == h.Grant.Lease && e.State == grant.StateExpired {
				o.Expired()
			}
		}
	}
	granted := next.Holder != nil && (prev.Holder == nil || prev.Holder.Grant.Lease != next.Holder.Grant.Lease)
	if granted && next.HighestFence > 1 && prev.HighestFence > 0 {
		o.Handoff(time.Duration(max(now-next.FreeAtMs, 0)) * time.Millisecond)
	}
}
