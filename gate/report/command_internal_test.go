// Proves that a gate applies a registry command only when it is signed by
// a key of the gate's own trust bundle for a live epoch, addressed to this
// gate, within its lifetime and not seen before, and that it answers a
// redelivery with the first answer without applying it twice. The negative
// control trusts the forger's key and shows the same forged command
// applied. A command issued before a restart is refused (the new process
// cannot know whether the old one applied it), with its control. Also: an
// oversized report is trimmed to fit.
package report

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// recorder is a Resumer that remembers its calls and answers err.
type recorder struct {
	calls []string
	err   error
}

func (r *recorder) Resume(_ context.Context, resource string, floor uint64, operator, note string) error {
	r.calls = append(r.calls, fmt.Sprintf("%s floor %d by %s: %s", resource, floor, operator, note))
	return r.err
}

type cmdEnv struct {
	reg   *gatetest.Issuer // the registry's key
	clk   *fakeclock.Clock
	res   *recorder
	r     *Reporter
	idSeq int
}

func newCmdEnv(t testing.TB, trust *gatetest.Issuer) *cmdEnv {
	e := &cmdEnv{reg: gatetest.NewIssuer("registry"), clk: fakeclock.New(gatetest.T0), res: &recorder{}}
	if trust == nil {
		trust = e.reg
	}
	r, err := New(Config{URL: "http://registry.invalid", Source: noSource{}, Clock: e.clk,
		Commands: &CommandConfig{Identity: "gate-1", Verifier: trust.Verifier, Resumer: e.res}})
	if err != nil {
		t.Fatal(err)
	}
	e.r = r
	e.clk.Advance(time.Second) // commands are issued after the Reporter started, past the skew bound
	return e
}

type noSource struct{}

func (noSource) Resources(context.Context, []string, int) ([]ResourceView, int, error) {
	return nil, 0, nil
}

// command returns a valid resume for gate-1, edited by edit, signed by k.
func (e *cmdEnv) command(t testing.TB, signer *gatetest.Issuer, edit func(*Command)) SignedCommand {
	e.idSeq++
	now := e.clk.Now().UnixMilli()
	c := Command{ID: fmt.Sprintf("c%d", e.idSeq), Gate: "gate-1", Action: ActionResume, Resource: "invoice-batch/2026-07-19",
		Floor: 3, Operator: "ops-admin", Note: "INC-42", IssuerEpoch: gatetest.Epoch, IssuedAtMs: now, ExpiresAtMs: now + CommandTTLMs}
	if edit != nil {
		edit(&c)
	}
	sc, err := Sign(c, signer.Key)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestCommandAppliedOnlyWhenGenuine(t *testing.T) {
	ctx := context.Background()
	e := newCmdEnv(t, nil)
	good := e.command(t, e.reg, nil)
	if res, _ := e.r.apply(ctx, good); res.Outcome != ResultApplied || len(e.res.calls) != 1 {
		t.Fatalf("genuine command: %+v, %d calls", res, len(e.res.calls))
	}
	if want := "invoice-batch/2026-07-19 floor 3 by ops-admin: INC-42 (dashboard command c1)"; e.res.calls[0] != want {
		t.Errorf("resumed as %q, want %q", e.res.calls[0], want)
	}
	e.r.result(Result{ID: "c1", Outcome: ResultApplied}, true)
	if res, _ := e.r.apply(ctx, good); res.Outcome != ResultApplied || len(e.res.calls) != 1 {
		t.Errorf("redelivered: %+v after %d calls, want the first answer and no second resume", res, len(e.res.calls))
	}
	forger := gatetest.NewIssuer("forger")
	tampered := e.command(t, e.reg, nil)
	tampered.Command = strings.Replace(tampered.Command, `"floor":3`, `"floor":30`, 1)
	for name, sc := range map[string]SignedCommand{
		"forged":          e.command(t, forger, nil),
		"tampered":        tampered,
		"other gate":      e.command(t, e.reg, func(c *Command) { c.Gate = "gate-2" }),
		"other action":    e.command(t, e.reg, func(c *Command) { c.Action = "drop-table" }),
		"too long-lived":  e.command(t, e.reg, func(c *Command) { c.ExpiresAtMs = c.IssuedAtMs + CommandTTLMs + 1 }),
		"expired":         e.command(t, e.reg, func(c *Command) { c.IssuedAtMs -= CommandTTLMs + 1000; c.ExpiresAtMs -= CommandTTLMs + 1000 }),
		"from the future": e.command(t, e.reg, func(c *Command) { c.IssuedAtMs += 5000; c.ExpiresAtMs += 5000 }),
		"not JSON":        {Command: "resume everything", Proof: good.Proof},
	} {
		if res, _ := e.r.apply(ctx, sc); res.Outcome != ResultRejected {
			t.Errorf("%s: %+v, want rejected", name, res)
		}
	}
	if len(e.res.calls) != 1 {
		t.Errorf("%d resumes, want only the genuine one: %q", len(e.res.calls), e.res.calls)
	}
	e.reg.RevokeBelow(gatetest.Epoch + 1)
	if res, _ := e.r.apply(ctx, e.command(t, e.reg, nil)); res.Outcome != ResultRejected || !strings.Contains(res.Message, "epoch revoked") {
		t.Errorf("revoked epoch: %+v", res)
	}

	// Negative control: a gate that trusts the forger's key applies its command.
	nc := newCmdEnv(t, forger)
	if res, _ := nc.r.apply(ctx, nc.command(t, forger, nil)); res.Outcome != ResultApplied || len(nc.res.calls) != 1 {
		t.Errorf("negative control: %+v; the check must be what stops a forged command", res)
	}
}

func TestCommandOutcomes(t *testing.T) {
	ctx := context.Background()
	e := newCmdEnv(t, nil)
	e.res.err = fmt.Errorf("sqlgate: %w: not above highestFence", gate.ErrResumeRefused)
	if res, final := e.r.apply(ctx, e.command(t, e.reg, nil)); res.Outcome != ResultRefused || !final {
		t.Errorf("refused by the gate: %+v final=%t", res, final)
	}
	e.res.err = errors.New("database is locked")
	if res, final := e.r.apply(ctx, e.command(t, e.reg, nil)); res.Outcome != ResultFailed || final {
		t.Errorf("database failure: %+v final=%t, want failed and retried on redelivery", res, final)
	}
	off, err := New(Config{URL: "http://registry.invalid", Source: noSource{}, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := off.apply(ctx, e.command(t, e.reg, nil)); res.Outcome != ResultDisabled {
		t.Errorf("a gate without CommandConfig: %+v", res)
	}
	old := e.command(t, e.reg, nil)
	e.clk.Advance(time.Duration(CommandTTLMs+600) * time.Millisecond) // past expiry and the 500 ms skew bound
	if res, _ := e.r.apply(ctx, old); res.Outcome != ResultRejected || !strings.Contains(res.Message, "expired") {
		t.Errorf("a command delivered after its expiry: %+v", res)
	}
}

// A gate process that restarts forgets the commands it answered. The
// registry redelivers a command until it hears the answer, so one the old
// process applied and could not report comes again to the new one; the
// resource may by then be paused again for another cause, which the
// redelivered resume would lift. The new Reporter refuses every command
// issued before it started; the control, a Reporter that does not know
// when it started, applies the same command a second time.
func TestCommandFromBeforeARestartRefused(t *testing.T) {
	ctx := context.Background()
	e := newCmdEnv(t, nil)
	sc := e.command(t, e.reg, nil)
	if res, _ := e.r.apply(ctx, sc); res.Outcome != ResultApplied {
		t.Fatalf("before the restart: %+v", res)
	}
	e.clk.Advance(2 * time.Second) // the process dies before its next report; a new one starts
	restarted := func(startedMs int64) *Reporter {
		r, err := New(Config{URL: "http://registry.invalid", Source: noSource{}, Clock: e.clk,
			Commands: &CommandConfig{Identity: "gate-1", Verifier: e.reg.Verifier, Resumer: e.res}})
		if err != nil {
			t.Fatal(err)
		}
		if startedMs != 0 {
			r.startedMs = startedMs
		}
		return r
	}
	r := restarted(0)
	res, final := r.apply(ctx, sc)
	if res.Outcome != ResultRejected || !final || !strings.Contains(res.Message, "before this gate process started") || len(e.res.calls) != 1 {
		t.Errorf("redelivered after a restart: %+v final=%t, %d resumes; want rejected, final, one resume", res, final, len(e.res.calls))
	}
	e.clk.Advance(time.Second)
	if res, _ := r.apply(ctx, e.command(t, e.reg, nil)); res.Outcome != ResultApplied {
		t.Errorf("a command issued after the restart: %+v", res)
	}

	// Negative control: without the start time the redelivery applies again.
	calls := len(e.res.calls)
	if res, _ := restarted(math.MinInt32).apply(ctx, sc); res.Outcome != ResultApplied || len(e.res.calls) != calls+1 {
		t.Errorf("negative control: %+v; the start time must be what stops the second resume", res)
	}
}

func TestEncodeTrimsToFit(t *testing.T) {
	rep := &Report{Schema: SchemaReport, LogID: "x"}
	long := strings.Repeat("r", TextBytesMax)
	for i := range ResourcesPerReportMax {
		v := ResourceView{Resource: fmt.Sprintf("r/%d", i), Mode: "enforce", PausedReason: long}
		for range RecordsPerResourceMax {
			v.Recent = append(v.Recent, RecordView{Kind: "QUARANTINED", Detail: long})
		}
		rep.Resources = append(rep.Resources, v)
	}
	for i := range DecisionsPerReportMax {
		rep.Decisions = append(rep.Decisions, Decision{Seq: uint64(i + 1), Resource: "r/0", Outcome: "ACCEPTED", Reason: long})
	}
	rep.ResourcesTotal = len(rep.Resources)
	b, err := encode(rep)
	if err != nil || len(b) > ReportBytesMax {
		t.Fatalf("encode: %d bytes, %v", len(b), err)
	}
	if _, err := Decode(b); err != nil {
		t.Fatalf("the trimmed report does not decode: %v", err)
	}
	if len(rep.Decisions) != 0 || len(rep.Resources) == 0 || rep.Resources[0].Resource != "r/0" {
		t.Errorf("trimmed to %d decisions and %d resources (first %s)", len(rep.Decisions), len(rep.Resources), rep.Resources[0].Resource)
	}
}
