// This file runs the gate scenarios in testdata/scenarios: each file is a
// story a reviewer can read without Go — grants issued, proofs made,
// writes sent, and after each step the outcome and state the
// specification requires — played against a real adapter (gate/memgate)
// over the real decision. The format:
//
//	# comment
//	grant NAME fence=N op=OP [owner=O] [at=SECONDS] [key=forger] [epoch=E] [resource=R]
//	proof NAME [held|expired|released|revoked] [at=SECONDS] [valid=SECONDS] [of=OTHER]
//	gate at=SECONDS                       the gate's clock
//	write NAME seq=S payload=P [caller=O] [status=none] [resource=R] [fence=N] [tamper]
//	resume floor=N
//	mode shadow|enforce
//	  -> OUTCOME|ok|refused [highest=N] [paused=true|false] [alarm=KIND|none] [effects=N]
//
// Times are seconds after the fixture's start, on the registry's clock for
// grants and proofs. A write uses its grant's latest proof.
package gate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/memgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/scenariotext"
)

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScenario(t, f) })
	}
}

// scenario is one file's world.
type scenario struct {
	t       *testing.T
	iss     *gatetest.Issuer
	clock   *fakeclock.Clock
	g       *memgate.Gate
	grants  map[string]*scnGrant
	effects int
	last    gate.Receipt
	lastErr error
	step    string
}

type scnGrant struct {
	w      gatetest.Writer
	iss    *gatetest.Issuer // the issuer at the grant's issue time
	g      *grant.Grant
	proof  string
	status []byte
	sproof string
}

const scnResource = "scn/res"

func runScenario(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	iss := gatetest.NewIssuer("scenario")
	iss.RevokeBelow(4) // epochs 1..3 are revoked in the gate's trust bundle
	s := &scenario{t: t, iss: iss, clock: fakeclock.New(gatetest.T0), grants: map[string]*scnGrant{}}
	if s.g, err = memgate.New(memgate.Config{Policy: gate.Policy{Verifier: iss.Verifier}, Clock: s.clock}); err != nil {
		t.Fatal(err)
	}
	lines, err := scenariotext.Lines(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		where := path + ":" + strconv.Itoa(l.N)
		if l.Expect {
			s.expect(where, scenariotext.Parse(l.Text))
			continue
		}
		s.step = where + ": " + l.Text
		s.do(scenariotext.Parse(l.Text))
	}
}

// at returns option k as an instant: seconds after the fixture's start.
func at(a scenariotext.Args, k string, def time.Time) time.Time {
	v, ok := a.Opts[k]
	if !ok {
		return def
	}
	sec, err := strconv.ParseFloat(v, 64)
	if err != nil {
		panic("scenario: " + k + "=" + v + " is not seconds")
	}
	return gatetest.T0.Add(time.Duration(sec * float64(time.Second)))
}

func (s *scenario) do(a scenariotext.Args) {
	t := s.t
	switch cmd := a.Words[0]; cmd {
	case "grant":
		s.grant(a)
	case "proof":
		s.proof(a)
	case "gate":
		if to := at(a, "at", s.clock.Now()); to.After(s.clock.Now()) {
			s.clock.Advance(to.Sub(s.clock.Now()))
		}
	case "write":
		s.write(a)
	case "resume":
		s.lastErr = s.g.Resume(scnResource, a.Uint("floor", 0), "operator", "scenario")
	case "mode":
		s.lastErr = s.g.SetMode(scnResource, gate.Mode(a.Words[1]), "operator")
	default:
		t.Fatalf("%s: unknown command %q", s.step, cmd)
	}
}

func (s *scenario) grant(a scenariotext.Args) {
	name := a.Words[1]
	iss := *s.iss
	iss.Now = at(a, "at", gatetest.T0)
	if a.Opts["key"] == "forger" {
		forger := gatetest.NewIssuer("forger")
		forger.Now = iss.Now
		iss = *forger
	}
	if e := a.Uint("epoch", 0); e > 0 {
		iss.Epoch = e
	}
	owner := a.Opts["owner"]
	if owner == "" {
		owner = "worker-" + name
	}
	res := a.Opts["resource"]
	if res == "" {
		res = scnResource
	}
	w := gatetest.Writer{Resource: res, Owner: owner, Lease: "lease-" + name, OperationID: a.Opts["op"], Fence: a.Uint("fence", 1)}
	g, gp := iss.Grant(w)
	sg := &scnGrant{w: w, iss: &iss, g: g, proof: gp}
	s.grants[name] = sg
	s.makeProof(sg, grant.StateHeld, iss.Now, 10*time.Second)
}

func (s *scenario) makeProof(sg *scnGrant, state grant.State, at time.Time, valid time.Duration) {
	iss := *sg.iss
	iss.Now, iss.StatusValidFor = at, valid
	st, sp := iss.Status(sg.g, state)
	sg.status, sg.sproof = st.Encode(), sp
}

func (s *scenario) proof(a scenariotext.Args) {
	sg := s.grants[a.Words[1]]
	state := grant.StateHeld
	if len(a.Words) > 2 {
		state = grant.State(strings.ToUpper(a.Words[2]))
	}
	when := at(a, "at", sg.iss.Now)
	valid := at(a, "valid", gatetest.T0.Add(10*time.Second)).Sub(gatetest.T0)
	if other, ok := a.Opts["of"]; ok { // another grant's genuine proof
		o := s.grants[other]
		s.makeProof(o, state, when, valid)
		sg.status, sg.sproof = o.status, o.sproof
		return
	}
	s.makeProof(sg, state, when, valid)
}

func (s *scenario) write(a scenariotext.Args) {
	sg := s.grants[a.Words[1]]
	m := &gate.Mutation{Resource: sg.w.Resource, Lease: sg.w.Lease, OperationID: sg.w.OperationID, FenceToken: sg.w.Fence,
		SegmentSeq: a.Uint("seq", 1), PayloadDigest: gatetest.Payload(a.Opts["payload"]),
		Grant: sg.g.Encode(), GrantProof: sg.proof, Status: sg.status, StatusProof: sg.sproof}
	if a.Opts["status"] == "none" {
		m.Status, m.StatusProof = nil, ""
	}
	if r, ok := a.Opts["resource"]; ok {
		m.Resource = r
	}
	if f := a.Uint("fence", 0); f > 0 {
		m.FenceToken = f
	}
	for _, w := range a.Words[2:] {
		if w == "tamper" {
			m.Grant = append([]byte(nil), m.Grant...)
			m.Grant[len(m.Grant)-3] ^= 1
		}
	}
	caller := a.Opts["caller"]
	if caller == "" {
		caller = sg.w.Owner
	}
	s.last, s.lastErr = s.g.Apply(context.Background(), caller, m, func() error { s.effects++; return nil })
}

func (s *scenario) expect(where string, a scenariotext.Args) {
	t := s.t
	if len(a.Words) == 0 {
		t.Fatalf("%s: an expectation needs an outcome", where)
	}
	got := string(gate.OutcomeOf(s.lastErr))
	if s.lastErr == nil && s.last.Outcome != "" {
		got = string(s.last.Outcome) // a shadow-mode pass-through carries the would-be outcome
	}
	switch want := a.Words[0]; want {
	case "ok":
		if s.lastErr != nil {
			t.Fatalf("%s: after %s: %v, want ok", where, s.step, s.lastErr)
		}
	case "refused":
		if s.lastErr == nil {
			t.Fatalf("%s: after %s: ok, want refused", where, s.step)
		}
	default:
		if got != want {
			t.Fatalf("%s: after %s: %s (%v), want %s", where, s.step, got, s.lastErr, want)
		}
	}
	st := s.g.State(scnResource)
	var rej *gate.Rejection
	alarm := "none"
	if errors.As(s.lastErr, &rej) && rej.Alarm != "" {
		alarm = string(rej.Alarm)
	}
	checks := map[string]string{
		"highest": strconv.FormatUint(st.HighestFence, 10), "paused": strconv.FormatBool(st.Paused),
		"alarm": alarm, "effects": strconv.Itoa(s.effects),
	}
	for k, want := range a.Opts {
		got, ok := checks[k]
		if !ok {
			t.Fatalf("%s: unknown check %q", where, k)
		}
		if got != want {
			t.Fatalf("%s: after %s: %s=%s, want %s (state %+v, err %v)", where, s.step, k, got, want, st, s.lastErr)
		}
	}
}
