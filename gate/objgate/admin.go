package objgate

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/adapter"
	"github.com/fencegate/fencegate/gate/internal/stored"
)

// State returns the resource's stored gate state, read from the store
// (zero gate.FenceState with the default mode for a resource it never saw).
func (g *Gate) State(ctx context.Context, resource string) (gate.FenceState, error) {
	h, err := g.fetch(ctx, resource)
	return h.st, err
}

// Read returns the resource's current content, following the manifest
// (nil for a resource never written).
func (g *Gate) Read(ctx context.Context, resource string) ([]byte, error) {
	h, err := g.fetch(ctx, resource)
	if err != nil {
		return nil, err
	}
	return current{g, h}.Bytes(ctx)
}

// QueryOperation answers MUTATION_UNKNOWN recovery for an operation
// attempted under fence (gate.Judge states the rule). It reads the
// manifest first, then the operation's receipts: every receipt committed
// before that manifest is its last receipt or an object, so the verdict
// holds as of the manifest.
func (g *Gate) QueryOperation(ctx context.Context, resource, operationID string, fence uint64) (gate.Answer, error) {
	if err := checkResource(resource); err != nil {
		return gate.Answer{}, err
	}
	h, err := g.fetch(ctx, resource)
	if err != nil {
		return gate.Answer{}, err
	}
	rs, err := g.operationReceipts(ctx, resource, operationID, h)
	if err != nil {
		return gate.Answer{}, err
	}
	return gate.Judge(rs, h.st.HighestFence, fence), nil
}

// ReceiptAt returns the receipt of the accept at (fence, seq) of
// resource, or nil if there is none, as of a fresh read of the manifest:
// what a downstream target checks a handed-off job against
// (gate.UpstreamReceipts) when the upstream resource is in the bucket.
func (g *Gate) ReceiptAt(ctx context.Context, resource string, fence, seq uint64) (*gate.Receipt, error) {
	if err := checkResource(resource); err != nil {
		return nil, err
	}
	h, err := g.fetch(ctx, resource)
	if err != nil {
		return nil, err
	}
	return g.priorReceipt(ctx, h, &gate.Mutation{Resource: resource, FenceToken: fence, SegmentSeq: seq})
}

// SetMode moves a resource to mode (a resource never seen is created in
// it); enforce → anything else is refused with gate.ErrModeDowngrade,
// and enforce on a store that failed Probe with ErrNoConditionalWrites.
func (g *Gate) SetMode(ctx context.Context, resource string, mode gate.Mode, operator string) error {
	if mode == gate.ModeEnforce {
		if err := g.refuseEnforce(resource); err != nil {
			return err
		}
	}
	return g.operator(ctx, adapter.SetMode(resource, operator, mode))
}

// SetMinPolicyGeneration raises the lowest grant policy generation the
// resource accepts (it only rises): a conditional replace of the
// manifest, then the action's record under records/action/.
func (g *Gate) SetMinPolicyGeneration(ctx context.Context, resource string, gen uint64, operator string) error {
	return g.operator(ctx, adapter.RaiseMinPolicy(resource, operator, gen, g.mode))
}

// Resume lifts a FENCE_REGRESSION pause once the operator states a
// registry fence floor above highestFence (gate.Resume). The floor and
// its instant go into the manifest's state by a conditional replace,
// then the action's record under records/action/ (a crash in between
// loses the record, never the resume).
func (g *Gate) Resume(ctx context.Context, resource string, registryFloor uint64, operator, note string) error {
	return g.operator(ctx, adapter.Resume(resource, operator, registryFloor, note, g.mode))
}

// operator runs one recorded operator action: a fresh read, the step, a
// conditional replace (keeping the receipts and the content), retried if
// a write came in between.
func (g *Gate) operator(ctx context.Context, a adapter.Action) error {
	if err := a.Check("objgate"); err != nil {
		return err
	}
	resource := a.Resource
	for attempt := range g.retries {
		g.forget(resource)
		h, err := g.fetch(ctx, resource)
		if err != nil {
			return err
		}
		now := g.clock.Now()
		next, detail, err := a.Step(h.st, h.etag != "", now)
		if err != nil {
			return err
		}
		nh := h
		nh.st = next
		nh, err = g.replace(ctx, resource, h, nh)
		if errors.Is(err, errConflict) {
			if err := backoff(ctx, attempt); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		g.keep(resource, nh)
		return g.writeRecords(ctx, h, []stored.Record{a.Record(detail, now)})
	}
	return fmt.Errorf("%w: operator action on %s", ErrContended, resource)
}

func checkResource(resource string) error { return adapter.CheckResource("objgate", resource) }
