package objgate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/gate/internal/retry"
	"github.com/fencegate/fencegate/gate/internal/stored"
)

// DataBytesMax bounds the business bytes Current.Bytes reads back.
const DataBytesMax = 64 << 20

// Current is the resource's content before the write being decided.
type Current interface {
	// Bytes reads it (nil if the resource has none yet).
	Bytes(ctx context.Context) ([]byte, error)
}

// BusinessFunc makes the protected change: it returns the resource's next
// content, which the gate commits with the manifest: inside it up to
// InlineBytesMax, else in a new immutable object the manifest points to.
// It may run more than once (once per attempt) and must not have other
// effects. An error commits nothing.
type BusinessFunc func(ctx context.Context, cur Current) ([]byte, error)

// Apply is applyFencedMutation for a resource kept in the bucket; caller
// is the identity the transport authenticated. Results are as
// redisgate's and sqlgate's: (receipt, nil) for ACCEPTED and for a
// shadow-mode pass-through (whose receipt carries the would-be outcome);
// the original receipt with an error matching gate.ErrReplayed; a
// *gate.Rejection (its pause, quarantine or alarm recorded); ErrBusiness;
// ErrContended; ErrNoConditionalWrites for an enforced resource on a
// store that failed Probe; or a store error, after which the outcome is
// unknown if the manifest replace was sent (query receipts by operation
// ID).
func (g *Gate) Apply(ctx context.Context, caller string, m *gate.Mutation, fn BusinessFunc) (gate.Receipt, error) {
	v, err := g.dec.Policy.Authenticate(m, caller)
	if err != nil {
		g.counters.Add(gate.OutcomeOf(err))
		return gate.Receipt{}, err
	}
	var fresh *held // the manifest a lost race read back, decided on next
	for attempt := range g.retries {
		h, d, prior, err := g.decide(ctx, v, fresh)
		if err != nil {
			return gate.Receipt{}, err
		}
		if h.st.Mode == gate.ModeEnforce {
			if err := g.refuseEnforce(m.Resource); err != nil {
				return gate.Receipt{}, err
			}
		}
		if d.Store || d.Proceed {
			err = g.commit(ctx, v, h, d, fn)
		}
		switch {
		case errors.Is(err, errConflict):
			g.forget(m.Resource)
			fresh = freshAfter(err)
			if err := backoff(ctx, attempt); err != nil {
				return gate.Receipt{}, err
			}
			continue
		case err != nil:
			g.forget(m.Resource)
			return gate.Receipt{}, err
		}
		now := g.clock.Now()
		if err := g.writeRecords(ctx, h, stored.Records(d, v, prior, now.UnixMilli())); err != nil {
			return gate.Receipt{}, err
		}
		g.counters.Add(d.Outcome)
		return answer(m, d)
	}
	return gate.Receipt{}, fmt.Errorf("%w: %s after %d attempts", ErrContended, m.Resource, g.retries)
}

// decide takes the manifest (fresh, read back after a lost race; else
// the one this Gate committed last, or a fresh read) and decides on it. A
// decision on a held manifest that writes nothing and is not a replay is
// taken again on a fresh read: only a conditional write proves a held
// manifest current.
func (g *Gate) decide(ctx context.Context, v *gate.Verified, fresh *held) (held, gate.Decision, *gate.Receipt, error) {
	var h held
	var cached bool
	var err error
	if fresh != nil {
		h = *fresh
	} else if h, cached, err = g.take(ctx, v.Mutation.Resource); err != nil {
		return h, gate.Decision{}, nil, err
	}
	for {
		prior, err := g.priorReceipt(ctx, h, &v.Mutation)
		if err != nil {
			return h, gate.Decision{}, nil, err
		}
		d := g.dec.DecideLocked(ctx, v, h.st, prior, g.clock.Now())
		if !cached || g.trustHeld || d.Store || d.Proceed || d.Outcome == gate.Replayed {
			return h, d, prior, nil
		}
		g.forget(v.Mutation.Resource)
		if h, err = g.fetch(ctx, v.Mutation.Resource); err != nil {
			return h, gate.Decision{}, nil, err
		}
		cached = false
	}
}

// priorReceipt finds the receipt at the mutation's (fence, segment) as of
// h: one h holds, or one written out, which exists only when h's state
// says it can (receipts are written with the state that reaches them,
// and written out before the manifest that lets them go).
func (g *Gate) priorReceipt(ctx context.Context, h held, m *gate.Mutation) (*gate.Receipt, error) {
	if r := h.receiptAt(m.FenceToken, m.SegmentSeq); r != nil {
		return r, nil
	}
	if above(m.FenceToken, m.SegmentSeq, h.st.HighestFence, h.st.LastSegmentSeq) {
		return nil, nil
	}
	return g.writtenReceipt(ctx, m.Resource, m.FenceToken, m.SegmentSeq)
}

// commit makes the decision's change and replaces the manifest with it:
// the new content (inline, or written to its object first), the new
// state, and for an accept its receipt, after writing the held ones out
// if the manifest is full. The writes before the replace run in
// parallel; only the replace commits.
func (g *Gate) commit(ctx context.Context, v *gate.Verified, h held, d gate.Decision, fn BusinessFunc) error {
	resource := v.Mutation.Resource
	next := held{st: d.State, receipts: h.receipts, data: h.data, inline: h.inline}
	var wg sync.WaitGroup
	var flushErr error
	if d.Outcome == gate.Accepted {
		if len(h.receipts) >= g.held {
			next.receipts = nil
			wg.Add(1)
			go func() { defer wg.Done(); flushErr = g.flush(ctx, resource, h) }()
		}
		next.receipts = appendReceipt(slices.Clip(next.receipts), d.Receipt)
	}
	var dataErr error
	if d.Proceed {
		next.data, next.inline, dataErr = g.writeContent(ctx, v, h, fn)
	}
	wg.Wait()
	if err := errors.Join(dataErr, flushErr); err != nil {
		return err
	}
	nh, err := g.replace(ctx, resource, h, next)
	if err != nil {
		return err
	}
	g.keep(resource, nh)
	return nil
}

// writeContent runs fn and places its bytes: inline up to
// InlineBytesMax, else in a new immutable object.
func (g *Gate) writeContent(ctx context.Context, v *gate.Verified, h held, fn BusinessFunc) (string, []byte, error) {
	body, err := fn(ctx, current{g, h})
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", ErrBusiness, err)
	}
	if len(body) <= InlineBytesMax {
		return "", bytes.Clone(body), nil
	}
	key := g.dataKey(v.Mutation.Resource, &v.Mutation, h.version)
	return key, nil, g.put(ctx, key, body)
}

type current struct {
	g *Gate
	h held
}

func (c current) Bytes(ctx context.Context) ([]byte, error) {
	if c.h.data == "" {
		return bytes.Clone(c.h.inline), nil
	}
	b, _, err := c.g.get(ctx, c.h.data, DataBytesMax)
	return b, err
}

// answer turns a committed decision into Apply's result.
func answer(m *gate.Mutation, d gate.Decision) (gate.Receipt, error) { return adapt.Result(d, m) }

// take returns the manifest this Gate holds for resource, or reads it.
func (g *Gate) take(ctx context.Context, resource string) (held, bool, error) {
	g.mu.Lock()
	h, ok := g.cache[resource]
	g.mu.Unlock()
	if ok {
		return h, true, nil
	}
	h, err := g.fetch(ctx, resource)
	return h, false, err
}

func (g *Gate) keep(resource string, h held) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.cache) >= CachedManifestsMax {
		clear(g.cache)
	}
	g.cache[resource] = h
}

func (g *Gate) forget(resource string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.cache, resource)
}

// backoffStep is the wait added per a lost conditional replace (retry.Backoff).
const backoffStep = time.Millisecond

func backoff(ctx context.Context, attempt int) error { return retry.Backoff(ctx, attempt, backoffStep) }
