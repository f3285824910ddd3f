// This file runs the shared adapter table (testkit/gatetest/conformance)
// against objgate on a real S3-compatible server (s3local: gofakes3 over
// HTTP on loopback, reached through the AWS SDK).
package objgate_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
	"github.com/fencegate/fencegate/testkit/s3local"
)

func TestConformance(t *testing.T) { conformance.Run(t, newHarness) }

func TestBatchProofs(t *testing.T) { conformance.RunBatchProofs(t, newHarness) }

// harness drives a Gate on a bucket of its own. The business effect log
// is the resource's content: one payload per line.
type harness struct{ g *objgate.Gate }

func newHarness(t testing.TB, cfg conformance.Config) conformance.Harness {
	c, bucket := s3local.NewBucket(t)
	g, err := objgate.Open(context.Background(), objgate.Config{Client: c, Bucket: bucket, Policy: gate.Policy{Verifier: cfg.Verifier},
		Querier: cfg.Querier, Clock: cfg.Clock})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{g: g}
}

func (h *harness) Apply(ctx context.Context, caller string, m *gate.Mutation, payload string) (gate.Receipt, error) {
	return h.g.Apply(ctx, caller, m, func(ctx context.Context, cur objgate.Current) ([]byte, error) {
		b, err := cur.Bytes(ctx)
		if err != nil {
			return nil, err
		}
		if payload == conformance.FailPayload {
			return nil, conformance.ErrBusinessFailed
		}
		return append(bytes.Clone(b), payload+"\n"...), nil
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
	b, err := h.g.Read(ctx, resource)
	if err != nil || len(b) == 0 {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"), nil
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
