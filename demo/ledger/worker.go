package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/wire"
)

// Worker timing for short demo leases: a 2s lease renews every ~0.7s, so
// a registry call must give up well within that, and the local deadline
// keeps half a second for clock rate error. Production leases are longer
// and keep the client's defaults.
const (
	WorkerCallTimeoutDefault  = 500 * time.Millisecond
	WorkerExpiryMarginDefault = 500 * time.Millisecond
)

// Event is one step of a worker's story, for a timeline.
type Event struct {
	Worker  string `json:"worker"`
	Kind    string `json:"kind"` // acquired, ready, accepted, rejected, unknown, resolved, receipts, released, failed
	Msg     string `json:"msg"`
	Fence   uint64 `json:"fence,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Receipt string `json:"receipt,omitempty"`
}

// WorkerConfig is one worker's job: write Entries to the ledger under a
// lease on Resource.
type WorkerConfig struct {
	Name        string           // shown in events
	Registry    client.Transport // the registry (an *httpclient.Client in production). Required.
	Ledger      *Client          // the protected service. Required.
	Resource    string           // the registry resource that guards the ledger rows
	OperationID string           // names this operation; receipts are found by it
	Entries     []Entry          // the result to write
	// Segments cuts Entries into this many segments, submitted strictly in
	// order under one grant. Optional, defaults to 1.
	Segments int
	TTL      time.Duration // the lease's server-side TTL
	Wait     time.Duration // how long to queue behind the current holder
	// LeaseOnly is the negative control: check the lease locally, then
	// write without an envelope.
	LeaseOnly bool
	// Hold, if set, is called after the first write is ready to send (its
	// envelope built) and before it is sent: the demo freezes the process
	// here, as a GC pause or a stalled VM would.
	Hold func(ctx context.Context) error
	// Emit receives every event. Optional.
	Emit func(Event)
	// Options are the client's; zero CallTimeout and ExpiryMargin take the
	// Worker…Default values above.
	Options client.Options
}

// Result is how the worker's write ended.
type Result struct {
	Fence    uint64
	Written  bool           // every segment stands (accepted, replayed or resolved ACCEPTED)
	Outcome  gate.Outcome   // the rejection, if one ended the run
	Receipts []gate.Receipt // one per segment that stands (fenced only)
}

type worker struct {
	cfg WorkerConfig
	res Result
}

// RunWorker acquires the lease, writes, and releases. A rejection by the
// gate is not an error: it is in Result.Outcome.
func RunWorker(ctx context.Context, cfg WorkerConfig) (Result, error) {
	if cfg.Registry == nil || cfg.Ledger == nil || len(cfg.Entries) == 0 {
		return Result{}, errors.New("ledger: worker needs Registry, Ledger and Entries")
	}
	if cfg.Segments < 1 {
		cfg.Segments = 1
	}
	if cfg.Options.CallTimeout == 0 {
		cfg.Options.CallTimeout = WorkerCallTimeoutDefault
	}
	if cfg.Options.ExpiryMargin == 0 {
		cfg.Options.ExpiryMargin = WorkerExpiryMarginDefault
	}
	w := &worker{cfg: cfg}
	s := client.NewSession(cfg.Registry, cfg.Options)
	l, err := s.Acquire(ctx, wire.AcquireRequest{
		Resource: cfg.Resource, OperationID: cfg.OperationID, OperationClass: "settle", TTLMs: uint64(cfg.TTL.Milliseconds()), WaitMs: uint64(cfg.Wait.Milliseconds()),
	})
	if err != nil {
		return Result{}, fmt.Errorf("ledger: worker %s: acquire %s: %w", cfg.Name, cfg.Resource, err)
	}
	g := l.Grant()
	w.res.Fence = g.FenceToken
	awaitCertain(ctx, l)
	w.emit(Event{Kind: "acquired", Fence: g.FenceToken,
		Msg: fmt.Sprintf("acquired %s: %s, fence %d, TTL %s", g.Resource, g.Lease, g.FenceToken, time.Duration(g.TTLMs)*time.Millisecond)})
	if cfg.LeaseOnly {
		err = w.writeLeaseOnly(ctx, l)
	} else {
		err = w.writeFenced(ctx, l)
	}
	if until := l.DrainUntil(); !until.IsZero() {
		w.emit(Event{Kind: "draining", Msg: fmt.Sprintf("a write's outcome is still unknown: Release waits until %s for its status proof to lapse",
			until.UTC().Format(time.RFC3339Nano))})
	}
	if rerr := l.Release(ctx); rerr != nil { // drains: see Lease.Release
		w.emit(Event{Kind: "released", Msg: "release: " + rerr.Error()})
	} else if st := l.State(); st == client.StateReleased {
		w.emit(Event{Kind: "released", Msg: "released " + g.Lease})
	} else {
		w.emit(Event{Kind: "released", Msg: fmt.Sprintf("release: %s had already ended at the registry (%s)", g.Lease, st)})
	}
	return w.res, err
}

func (w *worker) emit(e Event) {
	if w.cfg.Emit != nil {
		e.Worker = w.cfg.Name
		w.cfg.Emit(e)
	}
}

// writeLeaseOnly is what a lease alone gives you: a boolean checked before
// the write, and nothing at the resource.
func (w *worker) writeLeaseOnly(ctx context.Context, l *client.Lease) error {
	if st := l.State(); st != client.StateHeld {
		return fmt.Errorf("ledger: worker %s: lease is %s before writing", w.cfg.Name, st)
	}
	w.emit(Event{Kind: "ready", Fence: w.res.Fence, Msg: "lease state HELD; about to write (lease-only: no envelope)"})
	if w.cfg.Hold != nil {
		if err := w.cfg.Hold(ctx); err != nil {
			return err
		}
		w.emit(Event{Kind: "resumed", Msg: "resumed; it checked the lease before the pause, so it writes"})
	}
	if _, err := w.cfg.Ledger.Write(ctx, nil, w.cfg.Entries); err != nil {
		return fmt.Errorf("ledger: worker %s: %w", w.cfg.Name, err)
	}
	w.res.Written, w.res.Outcome = true, gate.Accepted
	w.emit(Event{Kind: "accepted", Outcome: string(gate.Accepted), Msg: "write landed: the lease-only ledger checks nothing"})
	return nil
}

// CertainWaitMax bounds how long a worker waits, right after an acquire,
// for its lease to be certain. The client counts a lease from when the
// acquire was first sent, so an acquire that queued for most of the TTL
// returns a lease already past its local deadline; the client asks the
// registry and, if the grant is HELD, the lease is certain again within a
// query round trip.
const CertainWaitMax = 2 * time.Second

// awaitCertain waits until l is HELD or RENEWING (or terminal, or
// CertainWaitMax passed). It polls: the client has no blocking call for
// "certain again".
func awaitCertain(ctx context.Context, l *client.Lease) {
	deadline := time.Now().Add(CertainWaitMax)
	certain := func() bool {
		st := l.State()
		return st.Terminal() || (st.Certain() && time.Now().Before(l.Deadline()))
	}
	for !certain() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}
