package httpcall

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
)

// ResponseBytesMax bounds the response body Call keeps.
const ResponseBytesMax = 1 << 20

// Errors.
var (
	// ErrMutationUnknown: the call was sent and no answer says what became
	// of it. Resolve the intent (Caller.Resolve); do not call again.
	ErrMutationUnknown = errors.New("httpcall: MUTATION_UNKNOWN")
	// ErrAlreadyRecorded: the intent was recorded before (the gate
	// answered REPLAYED), so it was sent before: Call does not send it
	// again. Resolve it.
	ErrAlreadyRecorded = errors.New("httpcall: intent already recorded and sent; resolve it instead of sending again")
	// ErrRefused: the third party answered with a 4xx: the call did not
	// take effect.
	ErrRefused = errors.New("httpcall: refused by the third party")
	// ErrPayloadDigest: the envelope's payload digest is not the request's.
	ErrPayloadDigest = errors.New("httpcall: the envelope's payload digest is not the request's (Request.Digest)")
)

// Config configures a Caller.
type Config struct {
	// Target names the third-party API, e.g. "payments". Required.
	Target string
	// Gate, Dialect and DB are the local gate the intents are recorded
	// through. Required.
	Gate    *sqlgate.Gate
	Dialect *sqlgate.Dialect
	DB      *sql.DB
	// Client sends the calls; its Timeout bounds the wait for an answer
	// (past it the outcome is unknown). Optional, defaults to
	// http.DefaultClient.
	Client *http.Client
	// Header carries the idempotency key. Optional, defaults to
	// HeaderDefault.
	Header string
	// Query is the effect query. Optional: without it the capability is
	// gate.CapabilityNone and an unknown outcome can only be reconciled by
	// hand.
	Query EffectQuery
	// Use is the allowed use the caller declares. Required: a third party
	// has no fenced-write capability (gate.CheckTarget).
	Use gate.Use
	// Mode must be empty: shadow and enforce are refused.
	Mode gate.Mode
	// Prefix of the intents table. Optional, defaults to
	// sqlgate.PrefixDefault.
	Prefix string
}

// Caller calls one third-party API under grants.
type Caller struct {
	cfg Config
	st  store
}

// New checks cfg (gate.CheckTarget included) and returns a Caller. Call
// Migrate before the first Call.
func New(cfg Config) (*Caller, error) {
	if cfg.Target == "" || cfg.Gate == nil || cfg.Dialect == nil || cfg.DB == nil {
		return nil, errors.New("httpcall: Config needs Target, Gate, Dialect and DB")
	}
	c := &Caller{cfg: cfg}
	if err := gate.CheckTarget(gate.TargetSpec{Name: cfg.Target, Capability: c.Capability(), Mode: cfg.Mode, Use: cfg.Use}); err != nil {
		return nil, err
	}
	if c.cfg.Client == nil {
		c.cfg.Client = http.DefaultClient
	}
	if c.cfg.Header == "" {
		c.cfg.Header = HeaderDefault
	}
	var err error
	c.st, err = newStore(cfg.Dialect, cfg.Prefix)
	return c, err
}

// Capability is effect-query with a Query, else none.
func (c *Caller) Capability() gate.Capability {
	if c.cfg.Query != nil {
		return gate.CapabilityEffectQuery
	}
	return gate.CapabilityNone
}

// Migrate creates the intents table if it is missing.
func (c *Caller) Migrate(ctx context.Context) error { return c.st.migrate(ctx, c.cfg.DB) }

// Result is the answer to a call that was sent and answered 2xx.
type Result struct {
	Intent Intent
	Status int
	Body   []byte
}

// Call records the intent of segment m through the local gate as caller
// (fn, if not nil, runs in the same transaction), then sends req once with
// the segment's idempotency key. A gate rejection (STALE_OWNER above all)
// is returned as it is, and nothing is sent. Other errors: ErrAlreadyRecorded
// (a replayed intent: nothing sent), ErrRefused (4xx: no effect),
// ErrMutationUnknown (sent, no answer: resolve it), each with the Intent
// in an *Error.
func (c *Caller) Call(ctx context.Context, caller string, m *gate.Mutation, req Request, fn sqlgate.BusinessFunc) (*Result, error) {
	if m.PayloadDigest != req.Digest() {
		return nil, ErrPayloadDigest
	}
	in := c.intentOf(m, req)
	_, err := c.cfg.Gate.Run(ctx, c.cfg.DB, caller, m, func(ctx context.Context, tx *sql.Tx) error {
		if err := c.st.insert(ctx, tx, in); err != nil {
			return err
		}
		if fn != nil {
			return fn(ctx, tx)
		}
		return nil
	})
	switch {
	case errors.Is(err, gate.ErrReplayed):
		return nil, &Error{Intent: in, Err: ErrAlreadyRecorded}
	case err != nil:
		return nil, err
	}
	res, err := c.send(ctx, in, req)
	c.st.setOutcome(ctx, c.cfg.DB, in, outcomeOf(err))
	return res, err
}

func (c *Caller) intentOf(m *gate.Mutation, req Request) Intent {
	return Intent{Target: c.cfg.Target, Resource: m.Resource, OperationID: m.OperationID, FenceToken: m.FenceToken,
		SegmentSeq: m.SegmentSeq, Key: Key(m.Resource, m.FenceToken, m.OperationRoot(), m.SegmentSeq),
		Method: req.Method, URL: req.URL, RequestDigest: req.Digest()}
}

func (c *Caller) send(ctx context.Context, in Intent, req Request) (*Result, error) {
	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return nil, &Error{Intent: in, Err: fmt.Errorf("httpcall: build request: %w", err)}
	}
	for k, vs := range req.Header {
		hr.Header[k] = vs
	}
	hr.Header.Set(c.cfg.Header, in.Key)
	resp, err := c.cfg.Client.Do(hr)
	if err != nil {
		return nil, &Error{Intent: in, Err: fmt.Errorf("%w: %s %s: %w", ErrMutationUnknown, req.Method, req.URL, err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, ResponseBytesMax))
	switch {
	case err != nil || resp.StatusCode >= 500:
		return nil, &Error{Intent: in, Status: resp.StatusCode, Err: fmt.Errorf("%w: %s %s answered %d (%v)", ErrMutationUnknown, req.Method, req.URL, resp.StatusCode, err)}
	case resp.StatusCode >= 300:
		return nil, &Error{Intent: in, Status: resp.StatusCode, Body: body, Err: fmt.Errorf("%w: %s %s answered %d", ErrRefused, req.Method, req.URL, resp.StatusCode)}
	}
	return &Result{Intent: in, Status: resp.StatusCode, Body: body}, nil
}

// Error is a call's failure with its intent.
type Error struct {
	Intent Intent
	Status int    // the HTTP status, 0 if none came
	Body   []byte // a refusal's body
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() + " (key " + e.Intent.Key + ")" }
func (e *Error) Unwrap() error { return e.Err }
