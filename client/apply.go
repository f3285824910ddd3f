package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/gate"
)

// LocalGate is a gate in the worker's own process over its own database
// (sqlgate.Local for database/sql, sqlgate.LocalPgx for pgx): it checks m
// and, only if it accepts, runs fn in the same transaction.
type LocalGate[T any] interface {
	Apply(ctx context.Context, caller string, m *gate.Mutation, fn func(context.Context, T) error) (gate.Receipt, error)
}

// Apply writes to the worker's own database under lease l, in one call:
// it builds the envelope for the lease's next segment (1, 2, 3, … as
// writes are accepted) with payload's digest (gate.DigestPayload), runs
// it through g — which verifies the grant and its proofs, decides on the
// fence and the segment, and runs fn in the same transaction only if it
// accepts — settles the answer with the lease so that Release need not
// wait for it, and returns the receipt. The caller identity is the
// lease's owner: the worker is the service (sqlgate.Local says why).
// Writes of one lease through Apply are one at a time; do not mix them
// with Lease.Envelope's own segment numbers.
//
// An error of fn (the business change) rolls the transaction back:
// nothing happened, and Apply returns it (errors.Is finds it). A refusal is the
// gate's error: errors.Is(err, gate.ErrStaleOwner) says a
// newer owner has written and nothing changed here (gate.OutcomeOf names
// any refusal). An error with no gate outcome (the commit failed) may or
// may not have committed: it wraps ErrOutcomeUnknown, the envelope stays
// unsettled (Release waits for its proof), and the write must be settled
// by operation ID (Resolver), never blindly retried. A lease whose
// ownership is not certain refuses before anything is sent
// (*NotCertainError).
func Apply[T any](ctx context.Context, l *Lease, g LocalGate[T], payload []byte, fn func(context.Context, T) error) (gate.Receipt, error) {
	var r gate.Receipt
	err := l.write(ctx, payload, func(ctx context.Context, m *gate.Mutation) error {
		var fnErr error
		var err error
		r, err = g.Apply(ctx, l.Grant().Owner, m, func(ctx context.Context, tx T) error {
			fnErr = fn(ctx, tx)
			return fnErr
		})
		if fnErr != nil && errors.Is(err, fnErr) {
			return &rolledBack{err}
		}
		return err
	})
	return r, err
}

// rolledBack is a local write whose business function failed: the gate
// rolled the transaction back, and the envelope never left the process.
type rolledBack struct{ err error }

func (e *rolledBack) Error() string { return e.err.Error() }
func (e *rolledBack) Unwrap() error { return e.err }

// Send is Apply for a write another service makes: it builds the envelope
// for the lease's next segment with payload's digest and calls send with
// it (your request to the service, carrying the envelope and the payload),
// then settles the answer. send returns nil when the service accepted the
// write, the service's refusal as an error gate.OutcomeOf can read (a
// *gate.Rejection, or one wrapping a gate sentinel such as
// gate.ErrStaleOwner), or any other error when the answer was lost: Send
// then wraps ErrOutcomeUnknown and leaves the envelope unsettled, as Apply
// does.
func Send(ctx context.Context, l *Lease, payload []byte, send func(ctx context.Context, m *gate.Mutation) error) error {
	return l.write(ctx, payload, send)
}

// write is Apply's and Send's: the next segment's envelope, the write,
// and its settlement.
func (l *Lease) write(ctx context.Context, payload []byte, do func(ctx context.Context, m *gate.Mutation) error) error {
	l.applyMu.Lock()
	defer l.applyMu.Unlock()
	seq := l.applied + 1
	m, err := l.Envelope(seq, gate.DigestPayload(payload))
	if err != nil {
		return err
	}
	err = do(ctx, &m)
	if rb := (*rolledBack)(nil); errors.As(err, &rb) {
		l.forget(seq)
		return rb.err // nothing happened: the business change failed and was rolled back
	}
	outcome := gate.OutcomeOf(err)
	if outcome == "" {
		return fmt.Errorf("client: write segment %d of %s: %w: %w", seq, l.Grant().Lease, ErrOutcomeUnknown, err)
	}
	l.Settle(seq, outcome)
	if gate.IsSuccess(err) {
		l.applied = seq
	}
	if outcome == gate.Accepted {
		return nil // however the answer said it (nil, or gate.Accepted.Err())
	}
	return err
}
