package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/wire"
)

// Downgrader is a Transport that can turn a write lease into a reader's
// (POST /v1/downgrade): *httpclient.Client and registry.Direct are.
type Downgrader interface {
	Downgrade(ctx context.Context, req wire.DowngradeRequest) (wire.Issued, error)
}

// downgradeRetryWait is the pause between two sends of a downgrade whose
// answer was lost (the same request ID: the registry answers a retry with
// the grant it made).
const downgradeRetryWait = 100 * time.Millisecond

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
	l.mu.Lock()
	l.downgraded = true // no envelope from here on
	l.mu.Unlock()
	l.opMu.Lock() // no renewal in flight meanwhile: the write lease ends under us
	is, sent, err := s.downgradeCall(ctx, d, wire.DowngradeRequest{Resource: g.Resource, Lease: g.Lease, RequestID: s.rnd.requestID()}, l.o.Limits().LeaseCallTimeout(time.Duration(g.TTLMs)*time.Millisecond))
	l.opMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("client: downgrade %s lease %s (it takes no more envelopes: release it): %w", g.Resource, g.Lease, err)
	}
	if is.Grant == nil || is.Grant.Resource != wire.ReadResource(g.Resource) || is.Grant.FenceToken != g.FenceToken || is.Grant.Owner != g.Owner {
		return nil, fmt.Errorf("client: downgrade %s: %w: the registry answered another grant", g.Resource, ErrBadAnswer)
	}
	from := sent
	if is.ExpiresAfterMs > 0 {
		from = sent.Add(time.Duration(is.ExpiresAfterMs)*time.Millisecond - time.Duration(is.Grant.TTLMs)*time.Millisecond)
	}
	reader := newLease(s, s.t, s.o, core.Granted{Issued: is, OperationID: l.op, From: from})
	// The registry ended l RELEASED in the same write: its release is
	// answered as a repeated one, and l ends here too.
	_ = l.ReleaseNoDrain(context.WithoutCancel(ctx))
	s.mu.Lock()
	s.live[g.Resource] = reader
	s.mu.Unlock()
	return reader, nil
}

// downgradeCall sends req until a definite answer or ctx's end, each send
// bounded by timeout; it returns the answer and the client-clock instant
// of the send that got it.
func (s *Session) downgradeCall(ctx context.Context, d Downgrader, req wire.DowngradeRequest, timeout time.Duration) (wire.Issued, time.Time, error) {
	for {
		sent := s.o.Clock.Now()
		cctx, cancel := context.WithTimeout(ctx, timeout)
		is, err := d.Downgrade(cctx, req)
		cancel()
		switch {
		case err == nil:
			return is, sent, nil
		case wire.CodeOf(err) != "" && !errors.Is(err, wire.ErrUnavailable) && !errors.Is(err, wire.ErrConflict), errors.Is(err, ErrRefused):
			return wire.Issued{}, sent, err // definite
		case ctx.Err() != nil:
			return wire.Issued{}, sent, fmt.Errorf("no answer (it may have been applied: request %s): %w", req.RequestID, err)
		}
		if err := s.sleepUntil(ctx, s.o.Clock.Now().Add(downgradeRetryWait)); err != nil {
			return wire.Issued{}, sent, fmt.Errorf("no answer (it may have been applied: request %s): %w", req.RequestID, err)
		}
	}
}
