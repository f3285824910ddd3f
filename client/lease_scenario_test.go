// This file runs the lease scenarios in testdata/lease: each file is a
// story of one lease's core (core.Lease) a reviewer can read
// without Go — what the core asks for and when, what answer it gets, which
// state follows, whether an envelope may be built, what a release waits
// for. The format:
//
//	# comment
//	lease ttl=SECONDS [at=SECONDS] [proof=SECONDS]   granted for an acquire sent at; proof: the HELD status's validUntil
//	lease ttl=SECONDS sent=SECONDS at=SECONDS expires-after=SECONDS [proof=SECONDS]
//	                     granted at at in answer to an acquire sent at sent, whose answer says the
//	                     lease expires expires-after seconds after the acquire reached the registry;
//	                     an acquire's core reads the answer and the lease counts from its Granted.From
//	next at=T            -> none [wake=T] | renew | refresh | query | release
//	answer KIND at=T [proof=T]   KIND: held, expired, refused, ok, lost
//	                     -> STATE (REQUESTED, HELD, RENEWING, OWNERSHIP_UNKNOWN, EXPIRED, RELEASED)
//	envelope seq=S at=T  -> ok | not-held | proof-stale
//	settle seq=S OUTCOME
//	release at=T [drain|nodrain] -> releasing until=T
//
// Times are seconds after the fixture's start (the client's clock and the
// registry's agree here; skew is the simulator's business). The options
// are the client's defaults, without jitter.
package client_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/scenariotext"
	"github.com/fencegate/fencegate/wire"
)

func TestLeaseScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/lease/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no lease scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runLeaseScenario(t, f) })
	}
}

type leaseScenario struct {
	t    *testing.T
	iss  *gatetest.Issuer
	g    *grant.Grant
	gp   string
	core *core.Lease
	call core.Call // the call in flight
	got  string    // what the last step produced, for its expectation
	step string
	o    client.Options
}

func secs(v string) time.Time {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		panic("lease scenario: " + v + " is not seconds")
	}
	return gatetest.T0.Add(time.Duration(f * float64(time.Second)))
}

func stamp(t time.Time) string {
	return strconv.FormatFloat(t.Sub(gatetest.T0).Seconds(), 'f', -1, 64)
}

func runLeaseScenario(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := &leaseScenario{t: t, iss: gatetest.NewIssuer("lease"), o: client.Options{}.WithDefaults()}
	lines, err := scenariotext.Lines(f)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		step, want, _ := strings.Cut(l.Text, "->")
		s.step = fmt.Sprintf("%s:%d: %s", path, l.N, strings.TrimSpace(step))
		s.do(scenariotext.Parse(step))
		if want = strings.TrimSpace(want); want != "" && s.got != want {
			t.Fatalf("%s\n  got  %s\n  want %s", s.step, s.got, want)
		}
	}
}

// issued is a HELD status for the scenario's grant, valid until until.
func (s *leaseScenario) issued(state grant.State, at, until time.Time) wire.Issued {
	iss := *s.iss
	iss.Now, iss.StatusValidFor = at, until.Sub(at)
	st, sp := iss.Status(s.g, state)
	return wire.Issued{Grant: s.g, GrantProof: s.gp, Status: st, StatusProof: sp}
}

func (s *leaseScenario) do(a scenariotext.Args) {
	at := func() time.Time { return secs(a.Opts["at"]) }
	switch cmd := a.Words[0]; cmd {
	case "lease":
		sent := gatetest.T0
		if v, ok := a.Opts["at"]; ok {
			sent = secs(v)
		}
		ttl := secs(a.Opts["ttl"]).Sub(gatetest.T0)
		iss := *s.iss
		iss.Now = sent // the grant's instant: at
		g, _ := iss.Grant(gatetest.Writer{Resource: "scn/lease", Owner: "worker-a", Lease: "lease-a", OperationID: "op-a", Fence: 1})
		g.TTLMs = uint64(ttl / time.Millisecond)
		g.ExpiresAt = sent.Add(ttl)
		gp, _ := iss.Key.Sign(g)
		if gp == "" {
			s.t.Fatal("sign")
		}
		s.g, s.gp = g, gp
		proof := sent.Add(ttl)
		if v, ok := a.Opts["proof"]; ok {
			proof = secs(v)
		}
		hand := core.Granted{Issued: s.issued(grant.StateHeld, sent, proof), OperationID: "op-a", From: sent}
		if v, ok := a.Opts["sent"]; ok {
			hand.Issued.ExpiresAfterMs = secs(a.Opts["expires-after"]).Sub(gatetest.T0).Milliseconds()
			hand = s.acquired(secs(v), sent, hand.Issued)
		}
		s.core = core.NewLease(s.o.Limits(), hand, nil)
		s.got = s.state()
	case "next":
		rd := s.core.Next(at())
		s.got = rd.Call.Kind.String()
		if rd.Call.Kind == core.CallNone && !rd.Wake.IsZero() {
			s.got += " wake=" + stamp(rd.Wake)
		}
		if rd.Call.Kind != core.CallNone {
			s.call = rd.Call
		}
	case "answer":
		s.answer(a.Words[1], at(), a.Opts)
	case "envelope":
		err := s.core.Step(at(), core.BuildEnvelope{Segment: uint64(a.Uint("seq", 1)), Payload: gatetest.Payload("p")}).Err
		var nh *client.NotCertainError
		switch {
		case err == nil:
			s.got = "ok"
		case errors.As(err, &nh):
			s.got = "not-held"
		case errors.Is(err, client.ErrProofStale):
			s.got = "proof-stale"
		default:
			s.got = err.Error()
		}
	case "settle":
		s.core.Step(gatetest.T0, core.Settle{Segment: uint64(a.Uint("seq", 1)), Outcome: gate.Outcome(a.Words[1])})
		s.got = ""
	case "release":
		s.core.Step(at(), core.Release{Drain: len(a.Words) < 2 || a.Words[1] != "nodrain"})
		s.got = "releasing until=" + stamp(s.core.View().ReleaseAt)
	default:
		s.t.Fatalf("%s: unknown command %q", s.step, cmd)
	}
}

func (s *leaseScenario) answer(kind string, at time.Time, opts map[string]string) {
	switch kind {
	case "lost":
		s.core.Step(at, core.Lost{Call: s.call})
	case "held":
		s.core.Step(at, core.Answer{Call: s.call, Issued: s.issued(grant.StateHeld, at, secs(opts["proof"]))})
	case "expired":
		s.core.Step(at, core.Answer{Call: s.call, Issued: s.issued(grant.StateExpired, at, at)})
	case "refused":
		s.core.Step(at, core.Answer{Call: s.call, Err: fmt.Errorf("%w: lease expired", wire.ErrLeaseExpired)})
	case "ok":
		s.core.Step(at, core.Answer{Call: s.call})
	default:
		s.t.Fatalf("%s: unknown answer %q", s.step, kind)
	}
	s.got = s.state()
}

// acquired runs the acquire's core for an acquire sent at sent and
// answered with is at at, and returns its hand-off to the lease.
func (s *leaseScenario) acquired(sent, at time.Time, is wire.Issued) core.Granted {
	req := wire.AcquireRequest{Resource: s.g.Resource, OperationID: "op-a", OperationClass: s.g.OperationClass,
		RequestID: s.g.RequestID, TTLMs: s.g.TTLMs, WaitMs: 30_000}
	a := core.NewAcquire(s.o.Limits(), req, func() float64 { return 0.5 })
	call := a.Next(sent).Call
	r := a.Step(at, core.Answer{Call: call, Issued: is})
	if r.Granted == nil {
		s.t.Fatalf("%s: the acquire's core did not take the grant: %v", s.step, r.Err)
	}
	return *r.Granted
}

// state returns the machine's state after the step.
func (s *leaseScenario) state() string { return string(s.core.View().State) }
