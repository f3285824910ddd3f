package sim

import (
	"context"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
)

// tick does what the client's schedule asks for at the worker's now, or
// sets the one live timer for the next instant it will ask for something.
func (k *worker) tick() {
	k.tickTok++
	if k.releasing || k.draining || k.is.Grant == nil {
		return
	}
	due, next := k.sched.Check(clientOptions, k.m.State(), k.localNow())
	switch due {
	case client.DueDeadline:
		k.step(client.EvDeadline)
		k.query()
		return
	case client.DueRenew, client.DueRefresh:
		k.step(client.EvRenewDue)
		k.renew(due == client.DueRefresh)
		return
	case client.DueQuery:
		k.query()
		return
	}
	if next.IsZero() {
		return
	}
	tok := k.tickTok
	k.timer(max(next.Sub(k.localNow()).Milliseconds()+1, 1), func() {
		if k.tickTok == tok {
			k.tick()
		}
	})
}

// call sends one registry call about the current grant and routes its
// answer (or its loss, after the call timeout) to the handlers.
func (k *worker) call(kind msgKind, do func(g *grant.Grant) (registry.Issued, error), answer func(sent time.Time, is registry.Issued, err error), lost func()) {
	k.callTok++
	tok, inc, g, sent := k.callTok, k.inc, k.is.Grant, k.localNow()
	k.w.send(k.id, pRegistry, kind, func() {
		is, err := do(g)
		k.w.logCall(kind, is, err)
		k.w.send(pRegistry, k.id, kind+1, func() {
			k.run(inc, func() {
				if tok == k.callTok {
					k.callTok++
					answer(sent, is, err)
				}
			})
		})
	})
	k.timer(callTimeoutMs, func() {
		if tok == k.callTok {
			k.callTok++
			lost()
		}
	})
}

// renew sends a renewal (or, with statusOnly, a status query) from
// RENEWING, as the client's Lease does.
func (k *worker) renew(statusOnly bool) {
	k.renewFrom(client.StateRenewing, statusOnly, client.EvRenewOK, client.EvRenewRefused, func() {
		k.step(client.EvRenewLost)
		k.query()
	})
}

// query asks the registry about the same grant while OWNERSHIP_UNKNOWN;
// like the client, it renews, so a HELD answer also gives a new deadline.
func (k *worker) query() {
	if k.m.State() != client.StateUnknown {
		return
	}
	k.renewFrom(client.StateUnknown, false, client.EvQueryHeld, client.EvQueryExpired, func() {
		k.step(client.EvQueryUnavailable)
		k.sched.QueryAt = k.localNow().Add(clientOptions.QueryInterval)
		k.tick()
	})
}

// renewFrom sends a renewal (a status query with statusOnly) from state
// from and reads its answer only while the machine is still there: HELD
// steps held and confirms, a refusal steps refused and ends the lease,
// anything else (no answer, an error that settles nothing) runs neither.
func (k *worker) renewFrom(from client.State, statusOnly bool, held, refused client.Event, neither func()) {
	k.call(msgRenew, func(g *grant.Grant) (registry.Issued, error) {
		if statusOnly {
			return k.w.reg.Status(context.Background(), g)
		}
		return k.w.reg.Renew(context.Background(), k.name, g.Resource, g.Lease)
	}, func(sent time.Time, is registry.Issued, err error) {
		if k.m.State() != from {
			return
		}
		switch isHeld, isRefused := k.judge(is, err); {
		case isHeld:
			k.step(held)
			k.confirm(is, sent, statusOnly)
			k.writeNext()
		case isRefused:
			k.step(refused)
			k.lost(k.is.Grant)
		default:
			neither()
		}
	}, func() {
		if k.m.State() == from {
			neither()
		}
	})
}

// judge reads an answer about the current grant as the client does: held
// means the registry said this very grant is HELD; refused means it said
// definitely that it is not. Anything else is a lost answer.
func (k *worker) judge(is registry.Issued, err error) (held, refused bool) {
	if err != nil {
		switch registry.CodeOf(err) {
		case "", "UNAVAILABLE", "CONFLICT":
			return false, false
		}
		return false, true
	}
	if is.Status == nil || is.Status.Grant != k.is.Grant.Digest() {
		return false, false
	}
	return is.Status.State == grant.StateHeld, is.Status.State != grant.StateHeld
}
