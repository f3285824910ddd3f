// Proves the Redis source against a real redis-server (testkit/redistest):
// a report lists paused resources first, then the recently written, with
// the alarm and quarantine counts, the last rows and the last operator
// action as the gate recorded them; a paused resource neither recent nor
// among the first names is found by the scan; the resume goes through the
// gate's own rule and record; the names walk page by page, each once. And
// the reads are bounded, as the server sees them: a resource with twenty
// quarantine records is read with LLEN and LRANGE -3 -1, where
// redisgate.Records asks for the whole list.
package redisreport_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/redisgate"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/gate/report/redisreport"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

const (
	paused = "invoice-batch/paused"
	busy   = "invoice-batch/busy"
	quiet  = "invoice-batch/a-quiet"
)

// commands records the LRANGE calls the client sends.
type commands struct {
	mu     sync.Mutex
	ranges []string // "start stop" of each LRANGE
}

func (c *commands) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.note(cmd); return next(ctx, cmd) }
}
func (c *commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.note(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *commands) note(cmd redis.Cmder) {
	if a := cmd.Args(); strings.EqualFold(cmd.Name(), "lrange") && len(a) == 4 {
		c.mu.Lock()
		c.ranges = append(c.ranges, fmt.Sprint(a[2], " ", a[3]))
		c.mu.Unlock()
	}
}

func (c *commands) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.ranges
	c.ranges = nil
	return out
}

type env struct {
	ctx  context.Context
	g    *redisgate.Gate
	iss  *gatetest.Issuer
	cmds *commands
}

func newEnv(t *testing.T) *env {
	e := &env{ctx: context.Background(), iss: gatetest.NewIssuer("redis"), cmds: &commands{}}
	c := redistest.Client(t)
	c.AddHook(e.cmds)
	var err error
	e.g, err = redisgate.Open(e.ctx, redisgate.Config{Client: c, Policy: gate.Policy{Verifier: e.iss.Verifier}, Prefix: redistest.Prefix(),
		Clock: fakeclock.New(e.iss.Now.Add(time.Second))})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) write(w gatetest.Writer, payload string) error {
	_, err := e.g.Apply(e.ctx, w.Owner, e.iss.Mutation(w, 1, payload), func(context.Context) ([]redisgate.Command, error) { return nil, nil })
	return err
}

func writer(res, lease string, fence uint64) gatetest.Writer {
	return gatetest.Writer{Resource: res, Owner: "worker-1", Lease: lease, OperationID: "op-" + lease, Fence: fence}
}

// story leaves one resource paused by two grants at fence 2, one with a
// quarantined segment and an operator action, and one written once.
func (e *env) story(t *testing.T) {
	for _, step := range []struct {
		w       gatetest.Writer
		payload string
		want    error
	}{
		{writer(paused, "l2", 2), "a", nil},
		{writer(paused, "l2-again", 2), "b", gate.ErrFenceRegression},
		{writer(busy, "l1", 1), "a", nil},
		{writer(busy, "l1", 1), "other payload", gate.ErrQuarantined},
		{writer(quiet, "l1", 1), "a", nil},
	} {
		if err := e.write(step.w, step.payload); !errors.Is(err, step.want) && !(step.want == nil && err == nil) {
			t.Fatalf("%s %s: %v, want %v", step.w.Resource, step.w.Lease, err, step.want)
		}
	}
	if err := e.g.SetMinPolicyGeneration(e.ctx, busy, 1, "alice"); err != nil {
		t.Fatal(err)
	}
}

func TestSource(t *testing.T) {
	e := newEnv(t)
	e.story(t)
	src := redisreport.New(e.g)
	views, total, err := src.Resources(e.ctx, []string{busy}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if total != 3 || len(views) != 2 || views[0].Resource != paused || views[1].Resource != busy {
		t.Fatalf("got %d of %d: %+v, want paused then the recent one", len(views), total, views)
	}
	p, b := views[0], views[1]
	if !p.Paused || p.HighestFence != 2 || p.Alarms != 1 || len(p.Recent) != 1 || p.Recent[0].Kind != "FENCE_REGRESSION" || !strings.Contains(p.PausedReason, "FENCE_REGRESSION") {
		t.Errorf("paused resource: %+v", p)
	}
	if b.Paused || b.Quarantined != 1 || len(b.Recent) != 1 || b.Recent[0].Kind != "QUARANTINED" || b.LastAction == nil || b.LastAction.Operator != "alice" {
		t.Errorf("busy resource: %+v (last action %+v)", b, b.LastAction)
	}
	if err := src.Resume(e.ctx, paused, 2, "ops-admin", "too low"); !errors.Is(err, gate.ErrResumeRefused) {
		t.Fatalf("resume at highestFence: %v, want refused", err)
	}
	if err := src.Resume(e.ctx, paused, 3, "ops-admin", "INC-42"); err != nil {
		t.Fatal(err)
	}
	views, _, err = src.Resources(e.ctx, nil, report.ResourcesPerReportMax)
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 3 || views[0].Resource != quiet || views[2].Resource != paused || views[2].Paused || views[2].Floor != 3 ||
		views[2].LastAction == nil || views[2].LastAction.Action != "resume" || views[2].LastAction.Operator != "ops-admin" {
		t.Errorf("after the resume: %+v", views)
	}
}

func TestScanFindsPausedResources(t *testing.T) {
	e := newEnv(t)
	e.story(t)
	// One resource a report, none recent: the paused one comes first
	// because the scan read its state, whichever name SCAN gives first.
	views, _, err := redisreport.New(e.g).Resources(e.ctx, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 1 || views[0].Resource != paused || !views[0].Paused {
		t.Errorf("the scan did not bring the paused resource first: %+v", views)
	}
}

func TestNamesWalkEachOnce(t *testing.T) {
	e := newEnv(t)
	var want []string
	for i := range 40 {
		r := fmt.Sprintf("jobs/%02d", i)
		want = append(want, r)
		if err := e.write(writer(r, "l1", 1), "x"); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		names, next, err := e.g.ResourceNames(e.ctx, cursor, 1)
		if err != nil || pages > 1000 {
			t.Fatalf("page %d: %v", pages, err)
		}
		for _, n := range names {
			seen[n] = true
		}
		if cursor = next; next == "" {
			break
		}
	}
	var got []string
	for n := range seen {
		got = append(got, n)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("walked %v, want %v", got, want)
	}
}

func TestRecordReadsAreBounded(t *testing.T) {
	e := newEnv(t)
	if err := e.write(writer(busy, "l1", 1), "a"); err != nil {
		t.Fatal(err)
	}
	const copies = 20
	for i := range copies {
		if err := e.write(writer(busy, "l1", 1), fmt.Sprint("other payload ", i)); !errors.Is(err, gate.ErrQuarantined) {
			t.Fatalf("copy %d: %v", i, err)
		}
	}
	e.cmds.take()
	views, _, err := redisreport.New(e.g).Resources(e.ctx, []string{busy}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if v := views[0]; v.Quarantined != copies || len(v.Recent) != report.RecordsPerResourceMax {
		t.Errorf("%d quarantined, %d rows: %+v", v.Quarantined, len(v.Recent), v)
	}
	if got := e.cmds.take(); !slices.Equal(got, []string{"-3 -1", "-3 -1", "-1 -1"}) {
		t.Errorf("the report's LRANGEs: %v, want the last three alarms and quarantine rows and the last action", got)
	}
	// What the bounded read avoids: the gate's own listing reads the list.
	if recs, err := e.g.Records(e.ctx, "quarantine", busy); err != nil || len(recs) != copies || !slices.Equal(e.cmds.take(), []string{"0 -1"}) {
		t.Errorf("redisgate.Records: %d records, %v", len(recs), err)
	}
}
