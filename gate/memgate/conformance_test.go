// This file runs the shared adapter table (testkit/gatetest/conformance)
// against memgate, the same table sqlgate, objgate and redisgate run.
package memgate_test

import (
	"context"
	"sync"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/memgate"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
)

func TestConformance(t *testing.T) { conformance.Run(t, newMemHarness) }

func TestBatchProofs(t *testing.T) { conformance.RunBatchProofs(t, newMemHarness) }

func newMemHarness(t testing.TB, cfg conformance.Config) conformance.Harness {
	g, err := memgate.New(memgate.Config{Policy: gate.Policy{Verifier: cfg.Verifier}, Querier: cfg.Querier, Clock: cfg.Clock})
	if err != nil {
		t.Fatal(err)
	}
	return &memHarness{g: g, effects: map[string][]string{}}
}

// memHarness keeps the business effect log beside the gate; the business
// function appends to it under the resource's lock.
type memHarness struct {
	g       *memgate.Gate
	mu      sync.Mutex
	effects map[string][]string
}

func (h *memHarness) Apply(ctx context.Context, caller string, m *gate.Mutation, payload string) (gate.Receipt, error) {
	return h.g.Apply(ctx, caller, m, func() error {
		if payload == conformance.FailPayload {
			return conformance.ErrBusinessFailed
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.effects[m.Resource] = append(h.effects[m.Resource], payload)
		return nil
	})
}

func (h *memHarness) State(_ context.Context, resource string) (gate.FenceState, error) {
	return h.g.State(resource), nil
}

func (h *memHarness) QueryOperation(_ context.Context, resource, op string, fence uint64) (gate.Answer, error) {
	return h.g.QueryOperation(resource, op, fence), nil
}

func (h *memHarness) Resume(_ context.Context, resource string, floor uint64) error {
	return h.g.Resume(resource, floor, "conformance", "suite")
}

func (h *memHarness) SetMode(_ context.Context, resource string, mode gate.Mode) error {
	return h.g.SetMode(resource, mode, "conformance")
}

func (h *memHarness) SetMinPolicyGeneration(_ context.Context, resource string, gen uint64) error {
	return h.g.SetMinPolicyGeneration(resource, gen, "conformance")
}

func (h *memHarness) Effects(_ context.Context, resource string) ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.effects[resource]...), nil
}

func (h *memHarness) Records(_ context.Context, resource string) (conformance.Records, error) {
	var rs conformance.Records
	for _, r := range h.g.Records(resource, "") {
		switch r.Kind {
		case memgate.KindAlarm:
			rs.Alarms = append(rs.Alarms, r.Alarm)
		case memgate.KindQuarantine:
			rs.Quarantined++
		case memgate.KindShadow:
			rs.ShadowLog++
		}
	}
	return rs, nil
}
