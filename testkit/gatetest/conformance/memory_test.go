// This file proves the table can fail: it passes on a minimal in-memory
// adapter built the way every adapter must be (Authenticate, then
// adapt.Decider.DecideLocked on the locked state, then store what the
// decision says), and named cases fail on mutants of it with one
// protection removed.
package conformance_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/gate/gatebreak"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
)

type mutant int

const (
	faithful         mutant = iota
	leaseOnly               // no decision: every authenticated write lands
	unlocked                // decides on a state read without holding it
	forgetsPause            // drops Decision.Store for the pause of a regression
	ignoresHeldUntil        // takes a held-form grant as HELD until its expiry
	skipsPath               // trusts a batch signature it verified once, whatever the path
	ignoresReadMode         // takes a read/write lock reader's grant (NAME/_read) as a writer's
)

type receiptKey struct {
	fence, seq uint64
}

type memResource struct {
	st       gate.FenceState
	receipts map[receiptKey]gate.Receipt
	effects  []string
	records  conformance.Records
}

type memGate struct {
	mu     sync.Mutex
	dec    adapt.Decider
	clock  *fakeclock.Clock
	res    map[string]*memResource
	mutant mutant
	sigs   map[string]bool // skipsPath: batch signatures verified once
}

func newMem(mut mutant) conformance.Factory {
	return func(t testing.TB, cfg conformance.Config) conformance.Harness {
		g := &memGate{dec: adapt.Decider{Policy: gate.Policy{Verifier: cfg.Verifier}, Querier: cfg.Querier}, clock: cfg.Clock,
			res: map[string]*memResource{}, mutant: mut, sigs: map[string]bool{}}
		if err := g.dec.Policy.Check(); err != nil {
			t.Fatal(err)
		}
		if mut == ignoresHeldUntil {
			g.dec.Policy = gatebreak.Replace(g.dec.Policy, func(in gate.Input) gate.Decision {
				if in.Status.Source == gate.StatusFromGrant {
					in.Status.ValidUntil = in.Verified.Grant.ExpiresAt
				}
				return gate.Decide(in)
			})
		}
		return g
	}
}

func (g *memGate) get(r string) *memResource {
	x := g.res[r]
	if x == nil {
		x = &memResource{st: gate.FenceState{Resource: r, Mode: gate.ModeEnforce}, receipts: map[receiptKey]gate.Receipt{}}
		g.res[r] = x
	}
	return x
}

func (g *memGate) Apply(ctx context.Context, caller string, m *gate.Mutation, payload string) (gate.Receipt, error) {
	v, err := g.authenticate(m, caller)
	if err != nil {
		return gate.Receipt{}, err
	}
	g.mu.Lock()
	x := g.get(m.Resource)
	st := x.st
	var prior *gate.Receipt
	if p, ok := x.receipts[receiptKey{m.FenceToken, m.SegmentSeq}]; ok {
		prior = &p
	}
	if g.mutant == unlocked {
		g.mu.Unlock() // st and prior go stale while others write
		time.Sleep(time.Millisecond)
		g.mu.Lock()
	}
	defer g.mu.Unlock()
	d := g.dec.DecideLocked(ctx, v, st, prior, g.clock.Now())
	if g.mutant == leaseOnly {
		d = gate.Decision{Outcome: gate.Accepted, Proceed: true, Store: true, State: st, Receipt: gate.Receipt{Resource: m.Resource,
			FenceToken: m.FenceToken, SegmentSeq: m.SegmentSeq, OperationID: m.OperationID, Outcome: gate.Accepted}}
	}
	if d.Proceed && payload == conformance.FailPayload {
		return gate.Receipt{}, conformance.ErrBusinessFailed
	}
	if d.Store && !(g.mutant == forgetsPause && d.Outcome == gate.FenceRegression) {
		x.st = d.State
	}
	if d.Outcome == gate.Accepted {
		x.receipts[receiptKey{m.FenceToken, m.SegmentSeq}] = d.Receipt
	}
	if d.Proceed {
		x.effects = append(x.effects, payload)
	}
	if d.Alarm {
		x.records.Alarms = append(x.records.Alarms, d.AlarmKind)
	}
	if d.Quarantine {
		x.records.Quarantined++
	}
	if d.ShadowLog {
		x.records.ShadowLog++
	}
	switch {
	case d.Outcome == gate.Accepted || d.Outcome == gate.Replayed:
		return d.Receipt, d.Err
	case d.Proceed:
		return gate.Receipt{Resource: m.Resource, FenceToken: m.FenceToken, SegmentSeq: m.SegmentSeq, Mode: gate.ModeShadow, Outcome: d.Outcome}, nil
	}
	return gate.Receipt{}, d.Err
}

func (g *memGate) State(_ context.Context, r string) (gate.FenceState, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.get(r).st, nil
}

func (g *memGate) QueryOperation(_ context.Context, r, op string, fence uint64) (gate.Answer, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	x := g.get(r)
	var rs []gate.Receipt
	for _, rc := range x.receipts {
		if rc.OperationID == op {
			rs = append(rs, rc)
		}
	}
	sort.Slice(rs, func(i, j int) bool {
		return rs[i].FenceToken < rs[j].FenceToken || rs[i].FenceToken == rs[j].FenceToken && rs[i].SegmentSeq < rs[j].SegmentSeq
	})
	return gate.Judge(rs, x.st.HighestFence, fence), nil
}

func (g *memGate) Resume(_ context.Context, r string, floor uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	x := g.get(r)
	next, err := gate.Resume(x.st, floor, g.clock.Now())
	if err == nil {
		x.st = next
	}
	return err
}

func (g *memGate) SetMode(_ context.Context, r string, mode gate.Mode) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.res[r] == nil { // first sight: created in the mode asked for
		g.get(r).st.Mode = mode
	}
	x := g.get(r)
	next, err := gate.ChangeMode(x.st.Mode, mode)
	x.st.Mode = next
	return err
}

func (g *memGate) SetMinPolicyGeneration(_ context.Context, r string, gen uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	x := g.get(r)
	if gen < x.st.MinPolicyGeneration {
		return fmt.Errorf("lower")
	}
	x.st.MinPolicyGeneration = gen
	return nil
}

func (g *memGate) Effects(_ context.Context, r string) ([]string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.get(r).effects), nil
}

func (g *memGate) Records(_ context.Context, r string) (conformance.Records, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rs := g.get(r).records
	rs.Alarms = slices.Clone(rs.Alarms)
	return rs, nil
}

// authenticate is Authenticate, but for skipsPath: a batch proof whose
// signature verified once is taken without its path (the grant is bound
// to the envelope, its proof never folded to the signed root).
func (g *memGate) authenticate(m *gate.Mutation, caller string) (*gate.Verified, error) {
	bp, berr := grant.ParseBatchProof(m.GrantProof)
	sig := string(bp.Signature)
	g.mu.Lock()
	seen := g.mutant == skipsPath && berr == nil && g.sigs[sig]
	g.mu.Unlock()
	if seen {
		gr, err := grant.ParseGrant(m.Grant)
		if err != nil {
			return nil, err
		}
		return &gate.Verified{Mutation: *m, Grant: gr, GrantDigest: gr.Digest(), Root: m.OperationRoot()}, nil
	}
	v, err := g.dec.Policy.Authenticate(m, caller)
	if g.mutant == ignoresReadMode && gate.OutcomeOf(err) == gate.ReadGrant {
		return g.readerAsWriter(m, caller)
	}
	if err == nil && berr == nil {
		g.mu.Lock()
		g.sigs[sig] = true
		g.mu.Unlock()
	}
	return v, err
}

// readerAsWriter is Authenticate with the mode check off: a reader's
// grant that passes every other step (proofs, binding, identity) is taken
// as a writer's.
func (g *memGate) readerAsWriter(m *gate.Mutation, caller string) (*gate.Verified, error) {
	refuse := func(o gate.Outcome, err error) (*gate.Verified, error) {
		return nil, &gate.Rejection{Outcome: o, Resource: m.Resource, Reason: fmt.Sprint(err)}
	}
	gr, err := grant.ParseGrant(m.Grant)
	if err != nil {
		return refuse(gate.BadProof, err)
	}
	ver := g.dec.Policy.Verifier
	if err := ver.VerifyDigest(grant.SchemaGrant, gr.Digest(), gr.IssuerEpoch, m.GrantProof); err != nil {
		return refuse(gate.BadProof, err)
	}
	v := &gate.Verified{Mutation: *m, Grant: gr, GrantDigest: gr.Digest(), Root: m.OperationRoot()}
	if len(m.Status) > 0 {
		if v.Status, err = grant.ParseStatus(m.Status); err != nil {
			return refuse(gate.BadProof, err)
		}
		if err := ver.VerifyDigest(grant.SchemaStatus, v.Status.Digest(), v.Status.IssuerEpoch, m.StatusProof); err != nil || v.Status.Grant != v.GrantDigest {
			return refuse(gate.BadProof, fmt.Errorf("status: %v", err))
		}
	}
	if m.Resource != gr.Resource || m.Lease != gr.Lease || m.FenceToken != gr.FenceToken || v.Root != gr.OperationRoot {
		return refuse(gate.BindingMismatch, fmt.Errorf("envelope not bound to the grant"))
	}
	if caller != gr.Owner {
		return refuse(gate.IdentityMismatch, fmt.Errorf("caller %q", caller))
	}
	return v, nil
}

func TestReferenceAdapterPasses(t *testing.T) {
	conformance.Run(t, newMem(faithful))
	conformance.RunBatchProofs(t, newMem(faithful))
}

func TestMutantsFail(t *testing.T) {
	for _, row := range []struct {
		mut   mutant
		cases []string
	}{
		{leaseOnly, []string{"Stale", "SegmentGap", "DifferentPayloadQuarantined", "RegressionPauses", "ShadowThenEnforce"}},
		{forgetsPause, []string{"RegressionPauses", "ResumeWithFloor"}},
		{unlocked, []string{"ConcurrentWriters"}},
		{ignoresHeldUntil, []string{"GrantHeldStatement"}},
		{skipsPath, []string{"ForgedBesideCachedRootRefused"}},
		{ignoresReadMode, []string{"ReadGrantRefused"}},
	} {
		for _, name := range row.cases {
			why := conformance.Fails(t, newMem(row.mut), name)
			if why == "" {
				t.Errorf("mutant %d passed case %s: the case cannot fail", row.mut, name)
				continue
			}
			t.Logf("mutant %d fails %s as it must: %s", row.mut, name, why)
		}
	}
}
