package dashboard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fencegate/fencegate/wire"
)

// Breaking a lock from the page: Registry.Break, the API's POST
// /v1/break, behind the page's confirmation. Who may: an admin, or an
// identity the resource policy grants break on the resource (permitted);
// nobody else sees the button. The operator confirms one lease — the one
// the form showed — and the break is refused if the resource changed
// hands since, so a confirmation made for a stuck holder never ends the
// lease of the worker that took over after it. (The check and the break
// are two calls: a lease that changes hands between them, in the
// milliseconds apart, is the one ended, and the action's result says so.)

// checkBreak reads resource's lock and refuses a break of anything but
// the lease q names, still held.
func (d *Dashboard) checkBreak(ctx context.Context, q request) (wire.LockStatus, error) {
	ls, err := d.cfg.Registry.LockStatus(ctx, q.Resource)
	switch {
	case err != nil:
		return ls, fmt.Errorf("read the lock of %s: %w", q.Resource, err)
	case ls.Holder == nil:
		return ls, fmt.Errorf("nothing to break: nobody holds %s now", q.Resource)
	case q.Lease == "":
		return ls, errors.New("no lease named: start from the Break… button beside the resource")
	case ls.Holder.Lease != q.Lease:
		return ls, fmt.Errorf("%s changed hands: lease %s is over, and %s holds it now under lease %s; look again and confirm anew if that one is stuck too",
			q.Resource, q.Lease, ls.Holder.Owner, ls.Holder.Lease)
	}
	return ls, nil
}

// breakFacts are what an operator reads before breaking: the holder,
// since when and how long it has left, who waits and since when, and
// what the break does. Unless asked, the lease is filled in with the
// current holder's.
func (d *Dashboard) breakFacts(ctx context.Context, q *request, a *actionData, asked bool) {
	if q.Resource == "" {
		return
	}
	ls, err := d.cfg.Registry.LockStatus(ctx, q.Resource)
	if err != nil {
		a.Warnings = append(a.Warnings, "cannot read the lock: "+err.Error())
		return
	}
	r := d.rules.row(ls)
	if h := ls.Holder; h != nil {
		if !asked && q.Lease == "" {
			q.Lease = h.Lease
		}
		a.Facts = append(a.Facts, fmt.Sprintf("held by %s since %s (%s), lease %s, fence %d, class %s, %s left",
			h.Owner, h.Since.UTC().Format("15:04:05 UTC"), ms(r.HeldForMs), h.Lease, h.Fence, h.OperationClass, ms(r.LeaseLeftMs)))
		if slices.Contains(d.rules.exempt, h.OperationClass) {
			a.Warnings = append(a.Warnings, fmt.Sprintf("class %s is an election's: breaking deposes the leader, and the next candidate leads", h.OperationClass))
		}
	} else {
		a.Warnings = append(a.Warnings, "nobody holds "+q.Resource+" now: there is nothing to break")
	}
	if q.Lease != "" && ls.Holder != nil && ls.Holder.Lease != q.Lease {
		a.Warnings = append(a.Warnings, fmt.Sprintf("lease %s is over: %s holds it now under lease %s", q.Lease, ls.Holder.Owner, ls.Holder.Lease))
	}
	var waiting []string
	for _, w := range ls.Waiters[:min(len(ls.Waiters), waitersShownMax)] {
		s := w.Owner
		if !w.Since.IsZero() {
			s += fmt.Sprintf(" since %s (%s)", w.Since.UTC().Format("15:04:05 UTC"), ms(age(ls.ReadAt, w.Since)))
		}
		waiting = append(waiting, s)
	}
	if len(waiting) == 0 {
		a.Facts = append(a.Facts, "nobody waits: the resource becomes free")
	} else {
		a.Facts = append(a.Facts, fmt.Sprintf("%d waiting, head first: %s; the head gets it at once, with fence %d or above", len(ls.Waiters), strings.Join(waiting, ", "), r.NextFence))
	}
	a.Facts = append(a.Facts, "every gate refuses the old holder's late writes (STALE_OWNER) once the next holder has written; one it already sent may land before that write, never after")
}

// breakMessage says what a break did, and whether it ended the lease the
// operator confirmed.
func breakMessage(confirmed string, br wire.BreakResponse) string {
	b := br.Broken
	if b == nil {
		return "nobody held it: nothing was broken"
	}
	msg := fmt.Sprintf("broke %s's lease %s (fence %d)", b.Owner, b.Lease, b.Fence)
	if b.Lease != confirmed {
		msg += fmt.Sprintf(", not the lease %s confirmed: the resource changed hands as the break ran", confirmed)
	}
	switch h := br.Status.Holder; {
	case h != nil:
		msg += fmt.Sprintf("; %s holds it now (fence %d)", h.Owner, h.Fence)
	case len(br.Status.Waiters) > 0:
		msg += fmt.Sprintf("; handed to %s, next in the queue", br.Status.Waiters[0].Owner)
	default:
		msg += "; free now"
	}
	return msg
}
