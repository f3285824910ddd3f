// This file proves the third-party story over real HTTP with a real lease:
// A's charge times out (its answer lost, or the request itself delayed),
// A's lease ends, B takes over, and the recoverer settles A's call by the
// effect query alone — reusing the charge that landed, or proving the one
// still on its way absent (the key voided, so it can never charge). Every
// request of A's operation carries the one key; A, stale, is refused by the
// local gate before it sends anything. The negative controls show what
// the key discipline prevents: a retry under a fresh key charges twice,
// and "not found" taken for absence lets the delayed request charge.
package thirdparty_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/downstream/httpcall"
	"github.com/fencegate/fencegate/examples/thirdparty"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/clienttest"
)

const callTimeout = 300 * time.Millisecond

// delaying holds the request carrying key until release is closed, then
// delivers it although its caller gave up: a request stuck in the network.
type delaying struct {
	key     string
	release chan struct{}
	late    chan int // the held request's status once delivered
}

func (d *delaying) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get(httpcall.HeaderDefault) != d.key {
		return http.DefaultTransport.RoundTrip(req)
	}
	body, _ := io.ReadAll(req.Body)
	held := req.Clone(context.WithoutCancel(req.Context()))
	held.Body = io.NopCloser(bytes.NewReader(body))
	held.Cancel = nil //lint:ignore SA1019 http.Client's Timeout still cancels through it
	go func() {
		<-d.release
		resp, err := http.DefaultTransport.RoundTrip(held)
		if err != nil {
			d.late <- 0
			return
		}
		resp.Body.Close()
		d.late <- resp.StatusCode
	}()
	<-req.Context().Done()
	return nil, req.Context().Err()
}

type story struct {
	t        *testing.T
	f        *clienttest.Env
	res      *clienttest.ResourceDB
	api      *thirdparty.Server
	url      string
	la, lb   *client.Lease
	keyA     string
	release  chan struct{}
	delay    *delaying
	landed   chan struct{}
	callerA  *httpcall.Caller
	recovery *httpcall.Caller
	query    httpcall.EffectQuery
}

func newStory(t *testing.T, requestLost bool, query httpcall.EffectQuery) *story {
	s := &story{t: t, f: clienttest.NewEnv(t, nil), api: thirdparty.NewServer(), release: make(chan struct{}), landed: make(chan struct{})}
	s.res = s.f.Resource()
	ts := httptest.NewServer(s.api)
	t.Cleanup(ts.Close)
	s.url = ts.URL
	la, err := s.f.Acquire(s.f.Ctx, s.f.Worker(clienttest.OwnerA, 1, true), clienttest.Request("settle-a"))
	if err != nil {
		t.Fatal(err)
	}
	s.la = la
	g := la.Grant()
	s.keyA = httpcall.Key(g.Resource, g.FenceToken, g.OperationRoot, 1)
	hc := &http.Client{Timeout: callTimeout}
	if requestLost {
		s.delay = &delaying{key: s.keyA, release: s.release, late: make(chan int, 1)}
		hc.Transport = s.delay
	} else {
		s.api.AfterCharge = func(key string) { // the charge is made; its answer is lost
			if key == s.keyA {
				close(s.landed)
				<-s.release
			}
		}
	}
	t.Cleanup(func() {
		select {
		case <-s.release:
		default:
			close(s.release)
		}
	})
	if query == nil {
		query = thirdparty.EffectQuery(s.url, http.DefaultClient)
	}
	s.query = query
	s.callerA = s.caller(hc)
	s.recovery = s.caller(http.DefaultClient)
	return s
}

func (s *story) caller(hc *http.Client) *httpcall.Caller {
	c, err := httpcall.New(httpcall.Config{Target: "payments", Gate: s.res.Gate, Dialect: sqlgate.SQLite, DB: s.res.DB, Client: hc,
		Query: s.query, Use: gate.UseIdempotentCompensable})
	if err != nil {
		s.t.Fatal(err)
	}
	if err := c.Migrate(s.f.Ctx); err != nil {
		s.t.Fatal(err)
	}
	return c
}

func (s *story) envelope(l *client.Lease, seq uint64, req httpcall.Request) *gate.Mutation {
	m, err := l.Envelope(seq, req.Digest())
	if err != nil {
		s.t.Fatal(err)
	}
	return &m
}

// run plays A's lost call, the takeover, the recovery and B's call, and
// returns the recoverer's verdict on A's call and, if A's request was
// delayed, the status it got when it finally arrived.
func (s *story) run() (gate.Verdict, int) {
	t, ctx := s.t, s.f.Ctx
	reqA := thirdparty.ChargeCall(s.url, "acme", 100)
	mA := s.envelope(s.la, 1, reqA)
	reqA2 := thirdparty.ChargeCall(s.url, "acme", 150)
	mA2 := s.envelope(s.la, 2, reqA2) // built before the pause, sent after it
	if _, err := s.callerA.Call(ctx, clienttest.OwnerA, mA, reqA, nil); !errors.Is(err, httpcall.ErrMutationUnknown) {
		t.Fatalf("A's call: %v, want MUTATION_UNKNOWN (timeout)", err)
	}
	s.f.Clock.Advance(clienttest.TTL + 2*time.Second) // A's lease ends
	lb, err := s.f.Acquire(ctx, s.f.Worker(clienttest.OwnerB, 2, true), clienttest.Request("settle-b"))
	if err != nil {
		t.Fatal(err)
	}
	s.lb = lb
	pending, err := s.recovery.Unresolved(ctx)
	if err != nil || len(pending) != 1 || pending[0].Key != s.keyA {
		t.Fatalf("recoverer's worklist %+v %v, want A's intent", pending, err)
	}
	e, err := s.recovery.Resolve(ctx, pending[0])
	if err != nil {
		t.Fatal(err)
	}
	close(s.release) // the lost answer, or the delayed request, arrives now
	late := 0
	if s.delay != nil {
		late = <-s.delay.late
	}
	reqB := thirdparty.ChargeCall(s.url, "acme", 200)
	if _, err := s.caller(http.DefaultClient).Call(ctx, clienttest.OwnerB, s.envelope(lb, 1, reqB), reqB, nil); err != nil {
		t.Fatalf("B's call: %v", err)
	}
	posts := len(s.api.Posts())
	if _, err := s.callerA.Call(ctx, clienttest.OwnerA, mA2, reqA2, nil); !errors.Is(err, gate.ErrStaleOwner) {
		t.Fatalf("stale A's next call: %v, want STALE_OWNER at the local gate", err)
	}
	if _, err := s.callerA.Call(ctx, clienttest.OwnerA, mA, reqA, nil); !errors.Is(err, httpcall.ErrAlreadyRecorded) {
		t.Fatalf("A re-calling its recorded intent: %v, want ErrAlreadyRecorded", err)
	}
	if n := len(s.api.Posts()); n != posts {
		t.Fatalf("the refused calls sent %d requests", n-posts)
	}
	return e.Verdict, late
}

// checkKeys asserts that every request of A's operation carried keyA, one
// request in all: never a second call, never another key.
func (s *story) checkKeys() {
	var a, other int
	for _, k := range s.api.Posts() {
		switch {
		case k == s.keyA:
			a++
		case !strings.HasPrefix(k, "fg1-"):
			s.t.Fatalf("a request without a derived key: %q", k)
		default:
			other++
		}
	}
	if a != 1 || other != 1 {
		s.t.Fatalf("posts %v: want A's key once and B's once", s.api.Posts())
	}
}

func TestTimeoutAnswerLostRecovererReusesTheCharge(t *testing.T) {
	s := newStory(t, false, nil)
	if v, _ := s.run(); v != gate.VerdictAccepted {
		t.Fatalf("verdict %s, want ACCEPTED (the charge landed)", v)
	}
	select {
	case <-s.landed:
	default:
		t.Fatal("A's charge never reached the API")
	}
	s.checkKeys()
	if c := s.api.Charges(); len(c) != 2 || c[0].Key != s.keyA || c[0].AmountCents != 100 || c[1].AmountCents != 200 {
		t.Fatalf("charges %+v, want A's one charge (reused) and B's", c)
	}
}

func TestTimeoutRequestDelayedRecovererProvesItAbsent(t *testing.T) {
	s := newStory(t, true, nil)
	v, late := s.run()
	if v != gate.VerdictProvenAbsent || late != http.StatusConflict {
		t.Fatalf("verdict %s, delayed request answered %d; want PROVEN_ABSENT and 409 (key voided)", v, late)
	}
	s.checkKeys()
	if c := s.api.Charges(); len(c) != 1 || c[0].AmountCents != 200 {
		t.Fatalf("charges %+v, want B's only: A's late request must not charge", c)
	}
	in, err := s.recovery.Intent(s.f.Ctx, clienttest.Resource, s.la.Grant().FenceToken, 1)
	if err != nil || in.Outcome != string(gate.VerdictProvenAbsent) {
		t.Fatalf("A's intent %+v %v, want its verdict recorded", in, err)
	}
}

func TestEnforceOnTheAPIRefused(t *testing.T) {
	s := newStory(t, false, nil)
	_, err := httpcall.New(httpcall.Config{Target: "payments", Gate: s.res.Gate, Dialect: sqlgate.SQLite, DB: s.res.DB,
		Query: thirdparty.EffectQuery(s.url, http.DefaultClient), Mode: gate.ModeEnforce})
	if !errors.Is(err, gate.ErrNoFencedWrite) || !strings.Contains(err.Error(), "single-writer") ||
		!strings.Contains(err.Error(), "idempotent, compensable narrow operations") {
		t.Fatalf("enforce on a third-party API: %v, want ErrNoFencedWrite naming the two allowed uses", err)
	}
	if s.callerA.Capability() != gate.CapabilityEffectQuery {
		t.Fatalf("capability %s, want effect-query", s.callerA.Capability())
	}
}
