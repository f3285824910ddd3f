// This file runs the shared adapter table (testkit/gatetest/conformance)
// against the gate inside PostgreSQL: every case but the status querier's,
// which a database cannot ask the registry.
package pggate_test

import (
	"context"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
)

// notApplicable are the cases that need a gate.StatusQuerier.
var notApplicable = map[string]string{
	"QuerierSettlesCloseCalls":   "the gate inside PostgreSQL has no status querier: a close call stays a suspected regression",
	"GrantHeldRunOutAsksQuerier": "the gate inside PostgreSQL has no status querier: a held statement that ran out is PROOF_EXPIRED (GrantHeldStatement)",
}

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, c := range conformance.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			if why, ok := notApplicable[c.Name]; ok {
				t.Skip(why)
			}
			c.Run(t, conformance.NewEnv(t, newHarness))
		})
	}
}

// harness drives the SQL gate through pggate.RunIn as the caller's role.
type harness struct {
	w   *world
	cfg conformance.Config
}

func newHarness(t testing.TB, cfg conformance.Config) conformance.Harness {
	w := newWorld(t)
	if err := w.mirror(context.Background(), cfg.Verifier.Bundle()); err != nil {
		t.Fatal(err)
	}
	return &harness{w: w, cfg: cfg}
}

func (h *harness) Apply(ctx context.Context, caller string, m *gate.Mutation, payload string) (gate.Receipt, error) {
	if err := h.w.mirror(ctx, h.cfg.Verifier.Bundle()); err != nil {
		return gate.Receipt{}, err
	}
	var fail error
	if payload == conformance.FailPayload {
		fail = conformance.ErrBusinessFailed
	}
	return h.w.run(ctx, caller, h.cfg.Clock.Now(), macProofs(m, h.cfg.Verifier.Bundle()), payload, fail)
}

func (h *harness) State(ctx context.Context, resource string) (gate.FenceState, error) {
	return pggate.State(ctx, h.w.db, resource)
}

func (h *harness) QueryOperation(ctx context.Context, resource, op string, fence uint64) (gate.Answer, error) {
	return pggate.QueryOperation(ctx, h.w.db, resource, op, fence)
}

func (h *harness) Resume(ctx context.Context, resource string, floor uint64) error {
	if err := h.w.setClock(ctx, h.cfg.Clock.Now()); err != nil {
		return err
	}
	return pggate.Resume(ctx, h.w.db, resource, floor, "conformance", "suite")
}

func (h *harness) SetMode(ctx context.Context, resource string, mode gate.Mode) error {
	return pggate.SetMode(ctx, h.w.db, resource, mode, "conformance")
}

func (h *harness) SetMinPolicyGeneration(ctx context.Context, resource string, gen uint64) error {
	return pggate.SetMinPolicyGeneration(ctx, h.w.db, resource, gen, "conformance")
}

func (h *harness) Effects(ctx context.Context, resource string) ([]string, error) {
	return h.w.effects(ctx, resource)
}

func (h *harness) Records(ctx context.Context, resource string) (conformance.Records, error) {
	a, q, s, err := pggate.Records(ctx, h.w.db, resource)
	return conformance.Records{Alarms: a, Quarantined: q, ShadowLog: s}, err
}

// TestConformanceReadGrantCanFail is the shared READ_GRANT case's
// negative control here: with authenticate's reader check cut out
// (withoutReadCheck: schema version 9's function), the case fails — a
// reader's grant is accepted on NAME/_read — so it is what catches the
// check's loss in this gate.
func TestConformanceReadGrantCanFail(t *testing.T) {
	t.Parallel()
	why := conformance.Fails(t, func(t testing.TB, cfg conformance.Config) conformance.Harness {
		h := newHarness(t, cfg).(*harness)
		withoutReadCheck(t, h.w.db)
		return h
	}, "ReadGrantRefused")
	if why == "" {
		t.Fatal("the gate without its reader check passed ReadGrantRefused: the case cannot fail")
	}
	t.Logf("without the reader check the case fails as it must: %s", why)
}
