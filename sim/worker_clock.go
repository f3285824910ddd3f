package sim

import (
	"time"

	"github.com/fencegate/fencegate/client/core"
)

// This file watches the lease clock from outside the client (issue 42):
// what the lease reports at and after its local deadline, and whether a
// worker starts an effect after it. The local deadline is the client's
// own (core.LeaseView.Schedule), on the worker's clock.

// probeLagMs is how long after a local deadline its probe looks: the
// driver's own timer on the deadline fires within a millisecond of it
// (timers run on whole ms), so by then the lease must have stepped.
const probeLagMs = 3

// probeDeadline arms a probe at the lease's local deadline, once per
// deadline: a renewal confirmed before it moves the deadline, and the
// probe of the old one finds nothing to judge.
func (k *worker) probeDeadline(l *core.Lease) {
	dl := l.View().Schedule.Deadline
	if dl.Equal(k.probedDeadline) {
		return
	}
	k.probedDeadline = dl
	k.timerAt(dl.Add(probeLagMs*time.Millisecond), func() {
		if k.lease != l || !l.View().Schedule.Deadline.Equal(dl) {
			return // ended, or renewed: a newer deadline has its own probe
		}
		if v := l.View(); v.State.Certain() || k.reportsCertain(l) {
			k.w.chk.heldPastDeadline(k.name, v.Issued.Grant, v.State, k.localNow().Sub(dl))
		}
	})
}

// effectStarted is called as the worker starts an effect (the next
// segment) because the lease said it may: it must be before the local
// deadline.
func (k *worker) effectStarted() {
	if past := k.localNow().Sub(k.lease.View().Schedule.Deadline); past >= 0 {
		k.w.chk.effectPastDeadline(k.name, k.lease.View().Issued.Grant, past)
	}
}
