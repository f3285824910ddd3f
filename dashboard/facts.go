package dashboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/wire"
)

// facts gathers what the operator should see before acting on q. Unless
// asked (q is as the operator submitted it), a missing value is filled
// with a suggestion.
func (d *Dashboard) facts(ctx context.Context, q *request, asked bool) actionData {
	a := actionData{Req: *q}
	switch q.Kind {
	case KindRevoke:
		t := d.trust(ctx)
		a.Facts = append(a.Facts, fmt.Sprintf("this registry signs under issuer epoch %d; epochs below %d are revoked", t.IssuerEpoch, t.RevokedBelow))
		if t.Bundle != nil {
			a.Facts = append(a.Facts, fmt.Sprintf("trust bundle version %d revokes below %d: update it too (fencegate keys bundle revoke-epoch), or gates keep accepting", t.Bundle.Version, t.Bundle.RevokedBelowEpoch))
		}
		if q.Value > t.IssuerEpoch {
			a.Warnings = append(a.Warnings, fmt.Sprintf("epoch %d is this registry's own: every grant it issues is REVOKED until it restarts with --issuer-epoch %d or more", t.IssuerEpoch, q.Value))
		}
		if q.Value <= t.RevokedBelow && q.Value > 0 {
			a.Warnings = append(a.Warnings, "the line is already there: this changes nothing")
		}
	case KindFloor, KindResume:
		d.resourceFacts(ctx, q, &a, asked)
	case KindBreak:
		d.breakFacts(ctx, q, &a, asked)
	}
	a.Req = *q
	return a
}

func (d *Dashboard) resourceFacts(ctx context.Context, q *request, a *actionData, asked bool) {
	if q.Resource == "" {
		return
	}
	ri, err := d.cfg.Registry.Resource(ctx, q.Resource)
	if err != nil {
		a.Warnings = append(a.Warnings, "cannot read the registry's state: "+err.Error())
		return
	}
	next := max(ri.HighestFence, ri.Floor)
	holder := "free"
	if ri.HolderOwner != "" {
		holder = "held by " + ri.HolderOwner
	}
	a.Facts = append(a.Facts, fmt.Sprintf("registry: highestFence %d, floor %d, next fence %d, %s, %d waiting", ri.HighestFence, ri.Floor, next+1, holder, ri.Waiters))
	gateHighest := uint64(0)
	for _, g := range d.gates.snapshot(d.cfg.Clock.Now()) {
		for _, v := range g.Report.Resources {
			if v.Resource != q.Resource {
				continue
			}
			gateHighest = max(gateHighest, v.HighestFence)
			state := "not paused"
			if v.Paused {
				state = "PAUSED: " + v.PausedReason
			}
			a.Facts = append(a.Facts, fmt.Sprintf("gate %s: highestFence %d, %s, %s (reported %s ago)", g.ID, v.HighestFence, v.Mode, state, ms(g.AgeMs)))
			if q.Kind == KindResume && g.ID == q.Gate && !v.Paused {
				a.Warnings = append(a.Warnings, "the gate's last report shows it not paused: it will refuse the resume")
			}
		}
	}
	if !asked && q.Value == 0 {
		q.Value = gateHighest + 1
		if q.Kind == KindFloor {
			q.Value = max(gateHighest+1, next) // "above": the next fence will be one more
		}
	}
	if q.Kind == KindResume && q.Value > next {
		v := url.Values{"kind": {KindFloor}, "resource": {q.Resource}, "value": {strconv.FormatUint(q.Value, 10)}}
		a.Links = append(a.Links, link{Href: PathPrefix + "action?" + v.Encode(),
			Text: fmt.Sprintf("raise the registry's floor to %d first (its next fence is %d)", q.Value, next+1)})
	}
}

// queueResume signs a resume command for the gate and queues it.
func (d *Dashboard) queueResume(a *Action, now time.Time) error {
	cmd := report.Command{ID: a.ID, Gate: a.Gate, Action: report.ActionResume, Resource: a.Resource, Floor: a.Value,
		Operator: a.Operator, Note: report.Cut(a.Note), IssuerEpoch: d.cfg.Registry.Config().IssuerEpoch,
		IssuedAtMs: now.UnixMilli(), ExpiresAtMs: now.UnixMilli() + report.CommandTTLMs}
	sc, err := report.Sign(cmd, d.cfg.Signer)
	if err != nil {
		return err
	}
	a.State, a.Message = StateQueued, "waiting for the gate's next report"
	a.command, a.expiresAt = &sc, time.UnixMilli(cmd.ExpiresAtMs)
	return d.actions.add(a, now)
}

// audit records one action as the API records admin calls, with
// via=dashboard.
func (d *Dashboard) audit(ctx context.Context, a *Action, err error) {
	outcome := a.State
	switch {
	case errors.Is(err, errForbidden):
		outcome = wire.CodeForbidden
	case errors.Is(err, httpapi.ErrForbiddenResource):
		outcome = wire.CodeForbiddenResource
	case errors.Is(err, errTokenUsed):
		outcome = outcomeConfirmationUsed
	case errors.Is(err, errTooManyConfirmations):
		outcome = outcomeConfirmationsFull
	case err != nil:
		if outcome = wire.CodeOf(err); outcome == "" {
			outcome = StateError
		}
	}
	attrs := []slog.Attr{slog.Bool("audit", true), slog.String("operator", a.Operator), slog.String("action", a.Kind),
		slog.String("resource", a.Resource), slog.Uint64("value", a.Value), slog.String("note", a.Note), slog.String("outcome", outcome)}
	switch a.Kind {
	case KindResume:
		attrs = append(attrs, slog.String("gate", a.Gate), slog.String("command", a.ID))
	case KindBreak:
		attrs = append(attrs, slog.String("lease", a.Lease))
		if a.Message != "" {
			attrs = append(attrs, slog.String("message", a.Message))
		}
	}
	d.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "admin action", append(attrs, slog.String("via", "dashboard"))...)
}
