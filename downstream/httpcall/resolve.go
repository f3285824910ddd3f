package httpcall

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// Intent is one recorded call: the segment it belongs to and its key.
type Intent struct {
	Target        string
	Resource      string
	OperationID   string
	FenceToken    uint64
	SegmentSeq    uint64
	Key           string
	Method, URL   string
	RequestDigest grant.Digest
	Outcome       string // last known: SENT, REFUSED, UNKNOWN, or a verdict of Resolve; "" before the call
}

// Effect is what the third party says became of an intent's call.
type Effect struct {
	// Verdict: ACCEPTED (the effect happened; Body describes it),
	// PROVEN_ABSENT (it did not, and the key can no longer take effect:
	// the third party refuses it from now on), or UNDETERMINED.
	Verdict gate.Verdict
	Body    []byte
}

// EffectQuery asks the third party about the call with in.Key (GET by
// idempotency key, or by operation ID). It must send nothing that could
// cause the effect. PROVEN_ABSENT is a promise, not "not found yet": only
// answer it when the third party guarantees the key cannot take effect
// later (it voided the key atomically, or its idempotency window is
// closed), otherwise answer UNDETERMINED.
type EffectQuery func(ctx context.Context, in Intent) (Effect, error)

// ErrNoEffectQuery: the Caller has no effect query (capability none).
var ErrNoEffectQuery = errors.New("httpcall: no effect query configured: reconcile the intent by hand")

// Resolve settles an intent whose outcome is unknown by the effect query
// alone; it never sends the call. Any process can resolve, the lease
// holder or not, since nothing is sent. The verdict is recorded.
func (c *Caller) Resolve(ctx context.Context, in Intent) (Effect, error) {
	if c.cfg.Query == nil {
		return Effect{}, ErrNoEffectQuery
	}
	e, err := c.cfg.Query(ctx, in)
	if err != nil {
		return Effect{}, fmt.Errorf("httpcall: effect query for %s: %w", in.Key, err)
	}
	switch e.Verdict {
	case gate.VerdictAccepted, gate.VerdictProvenAbsent, gate.VerdictUndetermined:
	default:
		return Effect{}, fmt.Errorf("httpcall: effect query for %s answered %q", in.Key, e.Verdict)
	}
	c.st.setOutcome(ctx, c.cfg.DB, in, string(e.Verdict))
	return e, nil
}

// Intent loads the intent recorded for (resource, fence, seq).
func (c *Caller) Intent(ctx context.Context, resource string, fence, seq uint64) (Intent, error) {
	return c.st.load(ctx, c.cfg.DB, c.cfg.Target, resource, fence, seq)
}

// Unresolved lists the intents whose call is unknown or was never
// answered (oldest first): a recoverer's worklist.
func (c *Caller) Unresolved(ctx context.Context) ([]Intent, error) {
	return c.st.unresolved(ctx, c.cfg.DB, c.cfg.Target)
}

func outcomeOf(err error) string {
	switch {
	case err == nil:
		return "SENT"
	case errors.Is(err, ErrRefused):
		return "REFUSED"
	}
	return "UNKNOWN"
}
