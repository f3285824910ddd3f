package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/wire"
)

// Downgrader is a Transport that can turn a write lease into a reader's
// (POST /v1/downgrade): *httpclient.Client and registry.Direct are.
type Downgrader interface {
	Downgrade(ctx context.Context, req wire.DowngradeRequest) (wire.Issued, error)
}

// Downgrade turns l, this session's write lease on a read/write lock,
// into a reader's lease in one registry write (wire.DowngradeRequest):
// the reader's grant names wire.ReadResource of the lock, with l's fence,
// TTL and operation, and no queued writer gets in between. From the
// moment Downgrade is called l builds no envelope (Envelope answers
// ErrNotCertain): the registry holds other readers back until every HELD
// statement of l has expired, on the promise that its holder stopped
// writing. Once the registry answers, l ends RELEASED and the reader's
// lease is returned HELD, kept under the lock's name (Session.Lease). A
// lost answer is asked again with the same request ID until ctx ends; a
// definite refusal (l expired, broken, not this owner's) is returned
// wrapped, and l, still refusing envelopes, should be released. The
// transport must be a Downgrader.
func (s *Session) Downgrade(ctx context.Context, l *Lease) (*Lease, error) {
	d, ok := s.t.(Downgrader)
	if !ok {
		return nil, fmt.Errorf("client: downgrade: transport %T cannot downgrade: %w", s.t, ErrRefused)
	}
	g := l.Grant()
	if len(l.handles) > 1 {
		return nil, fmt.Errorf("client: downgrade %s: a lock set has no readers: %w", l.name, wire.ErrInvalid)
	}
	if _, read := wire.ReadOf(g.Resource); read {
		return nil, fmt.Errorf("client: downgrade %s: already a reader's lease: %w", g.Resource, wire.ErrInvalid)
	}
	l.step(core.Downgrading{}) // no envelope from here on
	l.opMu.Lock()              // no renewal in flight meanwhile: the write lease ends under us
	granted, err := s.downgradeCall(ctx, d, core.NewDowngrade(l.o.Limits(), g, l.op, s.rnd.requestID()))
	if err != nil {
		l.opMu.Unlock()
		return nil, fmt.Errorf("client: downgrade %s lease %s (it takes no more envelopes: release it): %w", g.Resource, g.Lease, err)
	}
	// The registry ended l RELEASED in the same write: l is releasing
	// before its loop can send again (a renewal now would be refused and
	// end it EXPIRED), its release is answered as a repeated one, and l
	// ends here too.
	l.step(core.Release{})
	l.opMu.Unlock()
	reader := newLease(s, s.t, s.o, *granted)
	_ = l.ReleaseNoDrain(context.WithoutCancel(ctx))
	s.mu.Lock()
	s.live[g.Resource] = reader
	s.mu.Unlock()
	return reader, nil
}

// downgradeCall drives dc (core.Downgrade: the same request ID on every
// send) until it has a definite answer or ctx ends, each send bounded by
// its call's timeout; it returns the reader's lease to start.
func (s *Session) downgradeCall(ctx context.Context, d Downgrader, dc *core.Downgrade) (*core.Granted, error) {
	var last error
	for {
		rd := dc.Next(s.o.Clock.Now())
		switch {
		case rd.Done():
			return rd.Granted, rd.Err
		case rd.Call.Kind == core.CallNone:
			if err := s.sleepUntil(ctx, rd.Wake); err != nil {
				return nil, fmt.Errorf("no answer (it may have been applied: request %s): %w", dc.RequestID(), errors.Join(last, err))
			}
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, rd.Call.Timeout)
		is, err := d.Downgrade(cctx, *rd.Call.Downgrade)
		cancel()
		if rd = dc.Step(s.o.Clock.Now(), core.Answer{Call: rd.Call, Issued: is, Err: err}); !rd.Done() && ctx.Err() != nil {
			return nil, fmt.Errorf("no answer (it may have been applied: request %s): %w", dc.RequestID(), err)
		}
		last = err
	}
}
