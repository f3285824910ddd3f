package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/gate"
)

// writeFenced submits the entries as a segmented batch under the lease:
// each segment's envelope carries the grant, its fence and a status proof,
// and the ledger's gate checks them in the write's own transaction.
func (w *worker) writeFenced(ctx context.Context, l *client.Lease) error {
	chunks := split(w.cfg.Entries, w.cfg.Segments)
	_, err := client.RunSegments(ctx, uint64(len(chunks)), client.SegmentOptions{},
		func(ctx context.Context, seq uint64) ([]Entry, error) {
			return chunks[seq-1], nil // a real worker computes the segment here
		},
		func(ctx context.Context, seq uint64, entries []Entry) error {
			m, err := l.Envelope(seq, PayloadDigest(entries))
			if err != nil {
				return err
			}
			if seq == 1 && w.cfg.Hold != nil {
				w.emit(Event{Kind: "ready", Fence: m.FenceToken,
					Msg: fmt.Sprintf("envelope built (fence %d, segment %d of %d); about to send", m.FenceToken, seq, len(chunks))})
				if err := w.cfg.Hold(ctx); err != nil {
					return err
				}
				w.emit(Event{Kind: "resumed", Fence: m.FenceToken,
					Msg: fmt.Sprintf("resumed (its client now says %s); sending the envelope it built before the pause", l.State())})
			}
			return w.send(ctx, l, &m, entries)
		})
	var rej *gate.Rejection
	if errors.As(err, &rej) {
		// The gate said no: nothing was written, and the receipts prove it.
		w.res.Outcome = rej.Outcome
		w.reportAbsence(ctx)
		return nil
	}
	if err != nil {
		return fmt.Errorf("ledger: worker %s: %w", w.cfg.Name, err)
	}
	w.res.Written = true
	return nil
}

// send writes one segment and, if its outcome is unknown, settles it by
// operation ID. Note that it does not consult the lease: an envelope built
// while the lease was held is exactly what a paused process sends when it
// wakes. The gate, not the client, stops it.
func (w *worker) send(ctx context.Context, l *client.Lease, m *gate.Mutation, entries []Entry) error {
	r, err := w.cfg.Ledger.Write(ctx, m, entries)
	switch {
	case gate.IsSuccess(err):
		l.Settle(m.SegmentSeq, gate.OutcomeOf(err)) // answered: Release need not wait for its proof
		w.accepted(r, gate.OutcomeOf(err))
		return nil
	case !errors.Is(err, ErrMutationUnknown):
		l.Settle(m.SegmentSeq, gate.OutcomeOf(err)) // a non-final rejection stays unsettled
		var rej *gate.Rejection
		if errors.As(err, &rej) {
			w.emit(Event{Kind: "rejected", Fence: m.FenceToken, Outcome: string(rej.Outcome), Reason: rej.Reason,
				Msg: fmt.Sprintf("REJECTED %s: %s", rej.Outcome, rej.Reason)})
		}
		return err
	}
	// Unsettled: until it is resolved, Lease.Release waits for its status
	// proof to lapse (a copy of it could otherwise land after the release).
	w.emit(Event{Kind: "unknown", Fence: m.FenceToken, Msg: fmt.Sprintf("MUTATION_UNKNOWN for segment %d: %v", m.SegmentSeq, err)})
	if err := w.resolve(ctx, l, m, entries); err != nil {
		return err
	}
	l.Settle(m.SegmentSeq, gate.Accepted) // resolved: a late copy is REPLAYED or STALE_OWNER
	return nil
}

// resolve is MUTATION_UNKNOWN recovery: ask the ledger's receipts whether
// the segment happened, by operation ID.
func (w *worker) resolve(ctx context.Context, l *client.Lease, m *gate.Mutation, entries []Entry) error {
	resolver := &client.Resolver{Receipts: client.ReceiptQuerierFunc(w.cfg.Ledger.QueryOperation)}
	res, err := resolver.Resolve(ctx, client.UnknownOf(*m))
	if err != nil {
		return err
	}
	switch res.Verdict {
	case gate.VerdictAccepted: // it happened: keep its receipt, do not write again
		w.emit(Event{Kind: "resolved", Fence: m.FenceToken, Outcome: string(res.Verdict), Receipt: res.Receipt.ID(),
			Msg: fmt.Sprintf("receipt query: segment %d was ACCEPTED (receipt %s)", m.SegmentSeq, short(res.Receipt.ID()))})
		w.res.Receipts = append(w.res.Receipts, *res.Receipt)
		return nil
	case gate.VerdictProvenAbsent: // it never happened and never will under this fence
		w.emit(Event{Kind: "resolved", Fence: m.FenceToken, Outcome: string(res.Verdict),
			Msg: fmt.Sprintf("receipt query: segment %d PROVEN_ABSENT (highestFence %d > fence %d)", m.SegmentSeq, res.Answer.HighestFence, m.FenceToken)})
		return &gate.Rejection{Outcome: gate.StaleOwner, Resource: m.Resource, FenceToken: m.FenceToken,
			HighestFence: res.Answer.HighestFence, Reason: "proven absent: a newer fence has written"}
	}
	// UNDETERMINED: no receipt yet and no newer fence. While the lease is
	// held the simple recovery is to send the same envelope again: the gate
	// answers REPLAYED if the first copy landed, or accepts this one.
	w.emit(Event{Kind: "resolved", Fence: m.FenceToken, Outcome: string(res.Verdict),
		Msg: fmt.Sprintf("receipt query: segment %d UNDETERMINED; sending the same envelope again", m.SegmentSeq)})
	again, err := l.Refresh(*m)
	if err != nil {
		return err
	}
	r, err := w.cfg.Ledger.Write(ctx, &again, entries)
	if !gate.IsSuccess(err) {
		return err
	}
	w.accepted(r, gate.OutcomeOf(err))
	return nil
}

func (w *worker) accepted(r gate.Receipt, o gate.Outcome) {
	w.res.Receipts = append(w.res.Receipts, r)
	w.emit(Event{Kind: "accepted", Fence: r.FenceToken, Outcome: string(o), Receipt: r.ID(),
		Msg: fmt.Sprintf("%s fence %d segment %d, receipt %s", o, r.FenceToken, r.SegmentSeq, short(r.ID()))})
}

// reportAbsence shows the receipt query after a rejection: the operation
// did not happen, and never will under this fence.
func (w *worker) reportAbsence(ctx context.Context) {
	ans, err := w.cfg.Ledger.QueryOperation(ctx, w.cfg.Resource, w.cfg.OperationID, w.res.Fence)
	if err != nil {
		w.emit(Event{Kind: "receipts", Msg: "receipt query failed: " + err.Error()})
		return
	}
	w.emit(Event{Kind: "receipts", Fence: w.res.Fence, Outcome: string(ans.Verdict),
		Msg: fmt.Sprintf("receipt query for operation %s under fence %d: %s (highestFence %d)", w.cfg.OperationID, w.res.Fence, ans.Verdict, ans.HighestFence)})
}

// split cuts entries into n nearly equal, non-empty, ordered chunks.
func split(entries []Entry, n int) [][]Entry {
	n = min(n, len(entries))
	out := make([][]Entry, 0, n)
	for i := range n {
		out = append(out, entries[i*len(entries)/n:(i+1)*len(entries)/n])
	}
	return out
}

// short abbreviates a receipt ID for a timeline.
func short(id string) string {
	if len(id) > 19 {
		return id[:19] + "…"
	}
	return id
}
