package sqlgate

import (
	"context"

	"github.com/fencegate/fencegate/gate"
)

// Accepting is what a business function may learn of the accept it runs
// under: the envelope the gate accepted and the receipt that the same
// transaction stores. A transactional outbox uses it to give the jobs it
// enqueues their fence, segment and upstream receipt.
type Accepting struct {
	// Verified is the accepted envelope (for a job, the job as a write to
	// its target).
	Verified *gate.Verified
	// Receipt is the receipt stored with the business change; its ID is
	// final (the accept's time included).
	Receipt gate.Receipt
	// Job is the job being applied when the function runs under ApplyJob,
	// else nil.
	Job *gate.Job
}

type acceptingKey struct{}

type jobKey struct{}

// AcceptingFrom returns the accept a business function runs under, from
// the context Apply (Run, ApplyJob, RunJob) passed it. ok is false outside
// a business function, and when the function runs for a rejection that
// shadow mode lets through: that write has no accept and no receipt.
func AcceptingFrom(ctx context.Context) (a Accepting, ok bool) {
	a, ok = ctx.Value(acceptingKey{}).(Accepting)
	if ok {
		a.Job, _ = ctx.Value(jobKey{}).(*gate.Job)
	}
	return a, ok
}

// withAccepting returns ctx carrying the accept of decision d on v, or
// ctx itself for a decision other than an accept.
func withAccepting(ctx context.Context, v *gate.Verified, d gate.Decision) context.Context {
	if d.Outcome != gate.Accepted {
		return ctx
	}
	return context.WithValue(ctx, acceptingKey{}, Accepting{Verified: v, Receipt: d.Receipt})
}
