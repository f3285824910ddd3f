// Proves the object-store source against a real S3 API (gofakes3 in
// process, testkit/s3local): a report lists paused resources first, then
// the recently written, with the alarm and quarantine counts, the last
// rows and the last operator action as the gate recorded them; a paused
// resource neither recent nor among the first names is found by the
// scan; the resume goes through the gate's own rule and record. And the
// reads are bounded, counted at the S3 client: a resource with twenty
// quarantine records costs three record GETs the first time and none
// after while nothing is new, where objgate.Records reads all twenty.
package objreport_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/gate/report/objreport"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/s3local"
)

const (
	paused = "invoice-batch/paused"
	busy   = "invoice-batch/busy"
	quiet  = "invoice-batch/a-quiet"
)

// counting is the S3 client with its record reads and lists counted.
type counting struct {
	objgate.API
	gets, lists atomic.Int64 // of records/ keys
}

func (c *counting) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if strings.Contains(*in.Key, "/records/") {
		c.gets.Add(1)
	}
	return c.API.GetObject(ctx, in, opts...)
}

func (c *counting) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	if strings.Contains(*in.Prefix, "/records/") {
		c.lists.Add(1)
	}
	return c.API.ListObjectsV2(ctx, in, opts...)
}

type env struct {
	ctx context.Context
	api *counting
	g   *objgate.Gate
	iss *gatetest.Issuer
	clk *fakeclock.Clock
}

func newEnv(t *testing.T) *env {
	c, bucket := s3local.NewBucket(t)
	e := &env{ctx: context.Background(), api: &counting{API: c}, iss: gatetest.NewIssuer("main"), clk: fakeclock.New(gatetest.T0.Add(time.Second))}
	var err error
	e.g, err = objgate.Open(e.ctx, objgate.Config{Client: e.api, Bucket: bucket, Policy: gate.Policy{Verifier: e.iss.Verifier}, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) write(w gatetest.Writer, payload string) error {
	_, err := e.g.Apply(e.ctx, w.Owner, e.iss.Mutation(w, 1, payload), func(context.Context, objgate.Current) ([]byte, error) {
		return []byte(payload), nil
	})
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
	src := objreport.New(e.g, e.clk)
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
	// One resource a report: the first name in key order is the quiet
	// one; the paused one is neither first nor recent.
	views, _, err := objreport.New(e.g, e.clk).Resources(e.ctx, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 1 || views[0].Resource != paused || !views[0].Paused {
		t.Errorf("the scan did not bring the paused resource first: %+v", views)
	}
}

func TestRecordReadsAreBounded(t *testing.T) {
	e := newEnv(t)
	if err := e.write(writer(busy, "l1", 1), "a"); err != nil {
		t.Fatal(err)
	}
	const copies = 20
	for i := range copies { // each a quarantine record
		if err := e.write(writer(busy, "l1", 1), "other payload "+string(rune('a'+i))); !errors.Is(err, gate.ErrQuarantined) {
			t.Fatalf("copy %d: %v", i, err)
		}
	}
	src := objreport.New(e.g, e.clk)
	report1 := func(what string, gets, lists int64, quarantined int) {
		t.Helper()
		e.api.gets.Store(0)
		e.api.lists.Store(0)
		views, _, err := src.Resources(e.ctx, []string{busy}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if g, l := e.api.gets.Load(), e.api.lists.Load(); g != gets || l != lists {
			t.Errorf("%s: %d record GETs and %d record LISTs, want %d and %d", what, g, l, gets, lists)
		}
		if v := views[0]; v.Quarantined != quarantined || len(v.Recent) != report.RecordsPerResourceMax {
			t.Errorf("%s: %d quarantined, %d rows: %+v", what, v.Quarantined, len(v.Recent), v)
		}
	}
	report1("first report", 3, 3, copies) // the last three of twenty; a LIST per kind
	report1("nothing new", 0, 0, copies)
	e.clk.Advance(objreport.RecordsRefreshMs * time.Millisecond)
	report1("the refresh, nothing new", 0, 3, copies)
	if err := e.write(writer(busy, "l1", 1), "one more"); !errors.Is(err, gate.ErrQuarantined) {
		t.Fatal(err)
	}
	e.clk.Advance(objreport.RecordsRefreshMs * time.Millisecond)
	report1("one new record", 1, 3, copies+1)

	// What the bounded read avoids: the gate's own listing reads them all.
	e.api.gets.Store(0)
	if recs, err := e.g.Records(e.ctx, "quarantine", busy); err != nil || len(recs) != copies+1 || e.api.gets.Load() != copies+1 {
		t.Errorf("objgate.Records: %d records, %d GETs, %v", len(recs), e.api.gets.Load(), err)
	}
}

func TestNamesPageByPage(t *testing.T) {
	e := newEnv(t)
	want := []string{"a", "a-b", "a/b", "a/b/c", "b"}
	for _, r := range want {
		if err := e.write(writer(r, "l1", 1), "x"); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		names, next, err := e.g.ResourceNames(e.ctx, cursor, 1)
		if err != nil || pages > len(want) {
			t.Fatalf("page %d: %v (%v so far)", pages, err, got)
		}
		got = append(got, names...)
		if cursor = next; next == "" {
			break
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("walked %v, want each of %v once", got, want)
	}
	if _, total, err := objreport.New(e.g, e.clk).Resources(e.ctx, nil, 2); err != nil || total != len(want) {
		t.Errorf("total %d, %v; want %d (one walk of the scan)", total, err, len(want))
	}
}
