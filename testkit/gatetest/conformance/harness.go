// Package conformance is the one behavioural table every gate adapter
// runs: sqlgate on SQLite and PostgreSQL, objgate on an S3-compatible
// store, redisgate on redis-server. An adapter's test implements Harness
// over a real store and calls Run; each case starts a resource of its own
// and checks the outcome, the whole stored gate.FenceState, the business
// effects and the records (alarms, quarantine, shadow log) it left.
//
// The SQL adapters also run the coverage guard's table (guard.go,
// RunGuard): the attacks on the guard of a protected table, each with a
// negative control.
//
// The suite never re-implements the decision: it knows the outcomes the
// spec requires (accept, stale, next segment, gap, replay, quarantine,
// regression and pause, late copy, authentication failures, a read/write
// lock reader's grant refused (READ_GRANT), concurrent writers, receipt
// verdicts, one-way modes, resume with a floor) and
// asserts that the adapter, running gate.Policy.Authenticate and
// adapt.Decider.DecideLocked on the state it stores, produces them.
package conformance

import (
	"context"
	"errors"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/fakeclock"
)

// Harness drives one adapter over a real store. Every method acts on the
// store, never on memory the harness keeps: State must read what a fresh
// process would read.
type Harness interface {
	// Apply runs m, sent by the authenticated caller, through the gate
	// with a business effect: append payload to the resource's effect log
	// in the same atomic step as the gate's own writes. If payload is
	// FailPayload the business change must fail (after starting, where
	// the store allows) and Apply must return that error; nothing may be
	// written. It returns what the adapter returns: the receipt and nil
	// (ACCEPTED, or a shadow-mode pass-through whose receipt carries the
	// would-be outcome), the original receipt and an error matching
	// gate.ErrReplayed, or a *gate.Rejection.
	Apply(ctx context.Context, caller string, m *gate.Mutation, payload string) (gate.Receipt, error)
	// State returns the resource's stored gate state (zero State with the
	// adapter's default mode for a resource it never saw).
	State(ctx context.Context, resource string) (gate.FenceState, error)
	// QueryOperation answers MUTATION_UNKNOWN recovery (gate.Judge).
	QueryOperation(ctx context.Context, resource, operationID string, fence uint64) (gate.Answer, error)
	// Resume lifts a pause with the registry fence floor stated by an
	// operator (gate.Resume); refusals wrap gate.ErrResumeRefused.
	Resume(ctx context.Context, resource string, floor uint64) error
	// SetMode moves a resource shadow → enforce; a downgrade wraps
	// gate.ErrModeDowngrade.
	SetMode(ctx context.Context, resource string, mode gate.Mode) error
	// SetMinPolicyGeneration raises the resource's minimum grant policy
	// generation.
	SetMinPolicyGeneration(ctx context.Context, resource string, gen uint64) error
	// Effects returns the payloads the business effect log of resource
	// holds, in the order they were applied.
	Effects(ctx context.Context, resource string) ([]string, error)
	// Records returns what the gate recorded for resource besides
	// receipts.
	Records(ctx context.Context, resource string) (Records, error)
}

// Records are a resource's non-receipt records.
type Records struct {
	Alarms      []gate.AlarmKind // in the order raised
	Quarantined int              // quarantine entries
	ShadowLog   int              // shadow-log entries
}

// FailPayload makes Harness.Apply's business change fail.
const FailPayload = "conformance: business change fails"

// ErrBusinessFailed is what a harness's failing business change returns
// (the adapter may wrap it).
var ErrBusinessFailed = errors.New("conformance: business change failed")

// Config is what the suite hands an adapter's factory.
type Config struct {
	// Verifier trusts the suite's issuer; the adapter's gate.Policy uses it.
	Verifier *grant.Verifier
	// Clock is the gate's clock, which the suite moves (the adapter must
	// read time only here). A manual clock, it satisfies every adapter's
	// Clock interface.
	Clock *fakeclock.Clock
	// Querier, when not nil, is the gate's StatusQuerier.
	Querier gate.StatusQuerier
}

// Factory returns a harness over a fresh, empty store (or a fresh
// namespace in a shared one) configured with cfg. The suite calls it
// several times per run; cleanup is registered on t.
type Factory func(t testing.TB, cfg Config) Harness

// T is the part of testing.T a case uses. Run passes a *testing.T; the
// suite's own negative controls pass a recorder, to show a case failing
// against an adapter with a protection removed.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}

// Case is one named row of the table.
type Case struct {
	Name string
	Run  func(t T, e *Env)
}

// Run runs every case against the adapter newHarness builds, each as a
// subtest with a fresh harness.
func Run(t *testing.T, newHarness Factory) {
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			c.Run(t, NewEnv(t, newHarness))
		})
	}
}

// Cases returns the table in order.
func Cases() []Case {
	return []Case{
		{"Accept", testAccept},
		{"EqualFenceNextSegment", testNextSegment},
		{"SegmentGap", testSegmentGap},
		{"Stale", testStale},
		{"ReplayReturnsOriginalReceipt", testReplay},
		{"DifferentPayloadQuarantined", testQuarantine},
		{"PolicyStale", testPolicyStale},
		{"FailedAuthLeavesStateUnchanged", testAuthFailures},
		{"ReadGrantRefused", testReadGrant},
		{"BusinessFailureWritesNothing", testBusinessFailure},
		{"RegressionPauses", testRegression},
		{"LateCopyAfterReleaseDoesNotPause", testLateCopy},
		{"QuerierSettlesCloseCalls", testQuerier},
		{"GrantHeldStatement", testGrantHeld},
		{"GrantHeldRunOutAsksQuerier", testGrantHeldQuerier},
		{"OldGrantWithoutStatusNotHeld", testOldGrantNotHeld},
		{"GrantHeldRegression", testGrantHeldRegression},
		{"ResumeWithFloor", testResume},
		{"ReceiptQuery", testReceiptQuery},
		{"ShadowThenEnforce", testModes},
		{"ConcurrentWriters", testConcurrent},
	}
}
