package dashboard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fencegate/fencegate/registry/httpapi"
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

//
// What a break ends (Registry.Break): a lock's holder; a read/write
// lock's writer (the row's Break… beside it) or every reader (NAME/_read,
// the row's Break readers…, confirmed on the first reader's lease); one
// semaphore slot (NAME/_slot.i, a Break… per held slot); a lock set's
// member's whole set, which its form says — and a viewer who is not an
// admin needs break on every member, as through the API.

// allowSetBreak is the check Registry.BreakAllowed asks before a lock
// set's member's break ends the set's other members: nil (everything)
// for an admin, else the resource policy's break verb on each.
func (d *Dashboard) allowSetBreak(ctx context.Context, operator string) func(context.Context, []string) error {
	if viewerFrom(ctx).Admin {
		return nil
	}
	return func(_ context.Context, others []string) error {
		for _, m := range others {
			if err := d.cfg.Authorizer.Authorize(operator, httpapi.VerbBreak, m); err != nil {
				return fmt.Errorf("a lock set's member: breaking it ends the whole set, and %s may not break %s: %w", operator, m, err)
			}
		}
		return nil
	}
}

// heldLease is the lease a break of resource would end first, as ls (the
// lock of wire.RecordName(resource)) shows it: the holder, or for a
// reader's resource NAME/_read the first reader; nil when none.
func heldLease(resource string, ls wire.LockStatus) *wire.LockHolder {
	if _, readers := wire.ReadOf(resource); readers {
		if len(ls.Readers) == 0 {
			return nil
		}
		return &ls.Readers[0]
	}
	return ls.Holder
}

// stillHeld reports whether lease still holds resource in ls: the holder
// for a lock, one of the readers for NAME/_read.
func stillHeld(resource, lease string, ls wire.LockStatus) bool {
	if _, readers := wire.ReadOf(resource); readers {
		return slices.ContainsFunc(ls.Readers, func(h wire.LockHolder) bool { return h.Lease == lease })
	}
	return ls.Holder != nil && ls.Holder.Lease == lease
}

// checkBreak reads resource's lock and refuses a break of anything but
// the lease q names, still held (for NAME/_read: the reader the form
// showed first, still reading).
func (d *Dashboard) checkBreak(ctx context.Context, q request) (wire.LockStatus, error) {
	ls, err := d.cfg.Registry.LockStatus(ctx, wire.RecordName(q.Resource))
	held := heldLease(q.Resource, ls)
	switch {
	case err != nil:
		return ls, fmt.Errorf("read the lock of %s: %w", q.Resource, err)
	case held == nil:
		return ls, fmt.Errorf("nothing to break: nobody holds %s now", q.Resource)
	case q.Lease == "":
		return ls, errors.New("no lease named: start from the Break… button beside the resource")
	case !stillHeld(q.Resource, q.Lease, ls):
		return ls, fmt.Errorf("%s changed hands: lease %s is over, and %s holds it now under lease %s; look again and confirm anew if that one is stuck too",
			q.Resource, q.Lease, held.Owner, held.Lease)
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
	ls, err := d.cfg.Registry.LockStatus(ctx, wire.RecordName(q.Resource))
	if err != nil {
		a.Warnings = append(a.Warnings, "cannot read the lock: "+err.Error())
		return
	}
	r := d.rules.row(ls)
	if h := heldLease(q.Resource, ls); h != nil {
		if !asked && q.Lease == "" {
			q.Lease = h.Lease
		}
		d.heldFacts(q.Resource, ls, h, r, a)
	} else {
		a.Warnings = append(a.Warnings, "nobody holds "+q.Resource+" now: there is nothing to break")
	}
	if h := heldLease(q.Resource, ls); q.Lease != "" && h != nil && !stillHeld(q.Resource, q.Lease, ls) {
		a.Warnings = append(a.Warnings, fmt.Sprintf("lease %s is over: %s holds it now under lease %s", q.Lease, h.Owner, h.Lease))
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

// heldFacts are the facts of what the break ends: the lease h, and
// every other lease the same write ends (a lock set's other members,
// the other readers).
func (d *Dashboard) heldFacts(resource string, ls wire.LockStatus, h *wire.LockHolder, r ResourceRow, a *actionData) {
	if _, readers := wire.ReadOf(resource); readers {
		a.Facts = append(a.Facts, fmt.Sprintf("%d reader(s) hold %s, first %s (lease %s, fence %d): the break ends every reader's share in one write, never one reader — a writer waits for them all",
			len(ls.Readers), ls.Resource, h.Owner, h.Lease, h.Fence))
		return
	}
	a.Facts = append(a.Facts, fmt.Sprintf("held by %s since %s (%s), lease %s, fence %d, class %s, %s left",
		h.Owner, h.Since.UTC().Format("15:04:05 UTC"), ms(r.HeldForMs), h.Lease, h.Fence, h.OperationClass, ms(r.LeaseLeftMs)))
	if len(h.LockSet) > 0 {
		a.Warnings = append(a.Warnings, fmt.Sprintf("%s is a member of %s's lock set %s: breaking it ends the whole set — every member's lease, in one write — since the set's owner has lost it all",
			resource, h.Owner, strings.Join(h.LockSet, " ")))
	}
	if slices.Contains(d.rules.exempt, h.OperationClass) {
		a.Warnings = append(a.Warnings, fmt.Sprintf("class %s is an election's: breaking deposes the leader, and the next candidate leads", h.OperationClass))
	}
}

// breakMessage says what a break did, and whether it ended the lease the
// operator confirmed.
func breakMessage(confirmed string, br wire.BreakResponse) string {
	b := br.Broken
	if b == nil {
		return "nobody held it: nothing was broken"
	}
	msg := fmt.Sprintf("broke %s's lease %s (fence %d)", b.Owner, b.Lease, b.Fence)
	if len(br.Ended) > 1 {
		var others []string
		for _, e := range br.Ended {
			if e.Holder.Lease != b.Lease {
				others = append(others, fmt.Sprintf("%s on %s", e.Holder.Lease, e.Resource))
			}
		}
		if len(b.LockSet) > 0 {
			msg += ", and with it the whole lock set: " + strings.Join(others, ", ")
		} else {
			msg += ", and with it " + strings.Join(others, ", ")
		}
	}
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
