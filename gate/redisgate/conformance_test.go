// This file runs the shared adapter table (testkit/gatetest/conformance)
// against redisgate on a real redis-server.
package redisgate_test

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/redisgate"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
	"github.com/fencegate/fencegate/testkit/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

func TestConformance(t *testing.T) { conformance.Run(t, newHarness) }

func TestBatchProofs(t *testing.T) { conformance.RunBatchProofs(t, newHarness) }

// harness drives a Gate with its own key prefix on the shared server.
type harness struct {
	g *redisgate.Gate
	c *redis.Client
}

func newHarness(t testing.TB, cfg conformance.Config) conformance.Harness {
	c := redistest.Client(t)
	g, err := redisgate.New(redisgate.Config{Client: c, Policy: gate.Policy{Verifier: cfg.Verifier}, Querier: cfg.Querier,
		Clock: cfg.Clock, Prefix: redistest.Prefix()})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{g: g, c: c}
}

// effectsKey is the business data: a list in the resource's slot.
func (h *harness) effectsKey(resource string) string { return h.g.KeysOf(resource).Tag + ":effects" }

func (h *harness) Apply(ctx context.Context, caller string, m *gate.Mutation, payload string) (gate.Receipt, error) {
	return h.g.Apply(ctx, caller, m, func(context.Context) ([]redisgate.Command, error) {
		if payload == conformance.FailPayload {
			return nil, conformance.ErrBusinessFailed
		}
		return []redisgate.Command{{"RPUSH", h.effectsKey(m.Resource), payload}}, nil
	})
}

func (h *harness) State(ctx context.Context, resource string) (gate.FenceState, error) {
	return h.g.State(ctx, resource)
}

func (h *harness) QueryOperation(ctx context.Context, resource, op string, fence uint64) (gate.Answer, error) {
	return h.g.QueryOperation(ctx, resource, op, fence)
}

func (h *harness) Resume(ctx context.Context, resource string, floor uint64) error {
	return h.g.Resume(ctx, resource, floor, "conformance", "suite")
}

func (h *harness) SetMode(ctx context.Context, resource string, mode gate.Mode) error {
	return h.g.SetMode(ctx, resource, mode, "conformance")
}

func (h *harness) SetMinPolicyGeneration(ctx context.Context, resource string, gen uint64) error {
	return h.g.SetMinPolicyGeneration(ctx, resource, gen, "conformance")
}

func (h *harness) Effects(ctx context.Context, resource string) ([]string, error) {
	return h.c.LRange(ctx, h.effectsKey(resource), 0, -1).Result()
}

func (h *harness) Records(ctx context.Context, resource string) (conformance.Records, error) {
	var rs conformance.Records
	alarms, err := h.g.Records(ctx, "alarm", resource)
	if err != nil {
		return rs, err
	}
	for _, a := range alarms {
		rs.Alarms = append(rs.Alarms, gate.AlarmKind(a.AlarmKind))
	}
	q, err := h.g.Records(ctx, "quarantine", resource)
	if err != nil {
		return rs, err
	}
	s, err := h.g.Records(ctx, "shadow", resource)
	rs.Quarantined, rs.ShadowLog = len(q), len(s)
	return rs, err
}
