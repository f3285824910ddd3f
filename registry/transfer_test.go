// This file proves export and import between memory stores: a whole
// registry (records with floors, policy generations, a held lease and
// waiters, request entries, revoked epochs, a bumped range, the gate key
// history) comes out of
// an import as it went in, line for line; importing again changes
// nothing; an import cut short continues from the line it reports (or
// any earlier one) to the same end; an import never lowers what the
// target has (a gate key's state included, and a key ID the target holds
// with another secret stops the import: the switch cannot launder a
// resurrected key); and a broken export is refused at the line that
// breaks it.
package registry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/wire"
)

// populate gives store a registry's worth of state and returns the
// highest fence it issued.
func populate(t *testing.T, store registry.Store) uint64 {
	t.Helper()
	ctx := context.Background()
	k, _ := testKey(t)
	reg, err := registry.New(store, registry.DefaultConfig(epoch), clock.System{}, k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.BumpFenceRange(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.RevokeEpochsBelow(ctx, 3); err != nil {
		t.Fatal(err)
	}
	var highest uint64
	for i := range 300 { // more than a page of records and of request entries
		res := fmt.Sprintf("jobs/%03d", i)
		is, err := reg.Acquire(ctx, "worker-1", req(res, fmt.Sprintf("r-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		highest = max(highest, is.Grant.FenceToken)
		if i%3 != 0 {
			if err := reg.Release(ctx, "worker-1", res, is.Grant.Lease); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := reg.RaiseFloor(ctx, "jobs/floor-only", highest+40); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.SetPolicyGeneration(ctx, "jobs/001", 4); err != nil {
		t.Fatal(err)
	}
	for _, f := range [][]registry.GateKeyUse{issue43F1, issue43F2} { // gk-1 dropped, gk-2 active
		if _, err := reg.AdmitGateKeys(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	return highest + 40
}

func export(t *testing.T, store registry.Store) string {
	t.Helper()
	var b bytes.Buffer
	if _, err := registry.Export(context.Background(), store, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// body is an export without its header (whose revision is the store's).
func body(export string) string {
	_, rest, _ := strings.Cut(export, "\n")
	return rest
}

func TestExportImportRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		src := memstore.New()
		populate(t, src)
		out := export(t, src)
		if n := strings.Count(out, "\n"); n != 1+1+2+301+300+1 {
			t.Fatalf("export has %d lines, want header, settings, 2 gate keys, 301 records, 300 request entries, end", n)
		}
		dst := memstore.New()
		rep, err := registry.Import(ctx, dst, strings.NewReader(out), registry.ImportOptions{})
		if err != nil || !rep.Complete || rep.Keys.Added != 2 || rep.Records.Added != 301 || rep.Requests.Added != 300 || rep.Settings != "added" {
			t.Fatalf("import: %+v %v", rep, err)
		}
		if got := export(t, dst); body(got) != body(out) {
			t.Fatalf("the target's export differs from the source's")
		}
		again, err := registry.Import(ctx, dst, strings.NewReader(out), registry.ImportOptions{})
		if err != nil || again.Keys.Same != 2 || again.Records.Same != 301 || again.Requests.Same != 300 || again.Settings != "same" {
			t.Fatalf("import again: %+v %v, want every item the same", again, err)
		}
	})
}

// An export is the same JSON lines whatever form the stores keep: a
// store writing the JSON form exports what a compact one imports, and
// back, line for line.
func TestExportImportAcrossStoredForms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		src := memstore.New(memstore.WithStoredForm(registry.FormJSON))
		populate(t, src)
		out := export(t, src)
		compact := memstore.New()
		if rep, err := registry.Import(ctx, compact, strings.NewReader(out), registry.ImportOptions{}); err != nil || !rep.Complete {
			t.Fatalf("import into the compact form: %+v %v", rep, err)
		}
		mid := export(t, compact)
		if body(mid) != body(out) {
			t.Fatal("the compact store's export differs from the JSON store's")
		}
		back := memstore.New(memstore.WithStoredForm(registry.FormJSON))
		if rep, err := registry.Import(ctx, back, strings.NewReader(mid), registry.ImportOptions{}); err != nil || !rep.Complete {
			t.Fatalf("import back into the JSON form: %+v %v", rep, err)
		}
		if body(export(t, back)) != body(out) {
			t.Fatal("the round trip through the compact form changed the export")
		}
	})
}

// cutReader gives the first n bytes of s, then fails as a dropped
// connection or a killed pipe would.
type cutReader struct {
	r *strings.Reader
	n int
}

func (c *cutReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		return 0, errors.New("connection reset")
	}
	if len(p) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= n
	return n, err
}

func TestImportResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		src := memstore.New()
		populate(t, src)
		out := export(t, src)
		whole := memstore.New()
		if _, err := registry.Import(ctx, whole, strings.NewReader(out), registry.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, cut := range []int{len(out) / 5, len(out) / 2, len(out) - 30} {
			dst := memstore.New()
			rep, err := registry.Import(ctx, dst, &cutReader{strings.NewReader(out), cut}, registry.ImportOptions{})
			if err == nil || rep.Complete {
				t.Fatalf("cut at byte %d: %+v %v, want an error and an incomplete report", cut, rep, err)
			}
			for _, from := range []int{rep.Line, rep.Line / 2} { // the line reported, or any before it
				if _, err := registry.Import(ctx, dst, strings.NewReader(out), registry.ImportOptions{ResumeAfter: from}); err != nil {
					t.Fatalf("resume after %d: %v", from, err)
				}
				if body(export(t, dst)) != body(export(t, whole)) {
					t.Fatalf("cut at byte %d, resumed after line %d: not the whole import's state", cut, from)
				}
			}
		}
		// A file that simply ends early says so.
		short := out[:strings.LastIndex(out, `{"kind":"end"`)]
		if _, err := registry.Import(ctx, memstore.New(), strings.NewReader(short), registry.ImportOptions{}); err == nil || !strings.Contains(err.Error(), "without its end line") {
			t.Fatalf("an export without its end line: %v", err)
		}
	})
}

func TestImportNeverLowers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		src := memstore.New()
		populate(t, src)
		out := export(t, src)

		// The target went further on a resource and has its own, higher
		// fence generation (but no revoked epochs).
		dst := memstore.New()
		k, _ := testKey(t)
		reg, err := registry.New(dst, registry.DefaultConfig(epoch), clock.System{}, k)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := reg.BumpFenceRange(ctx, 0); err != nil {
				t.Fatal(err)
			}
		}
		ahead, err := reg.Acquire(ctx, "worker-2", req("jobs/000", "x-1"))
		if err != nil {
			t.Fatal(err)
		}
		before, _ := reg.Resource(ctx, "jobs/000")
		rep, err := registry.Import(ctx, dst, strings.NewReader(out), registry.ImportOptions{})
		if err != nil || rep.Settings != "raised" || rep.Records.Kept != 1 || rep.Records.Added != 300 {
			t.Fatalf("import: %+v %v", rep, err)
		}
		after, _ := reg.Resource(ctx, "jobs/000")
		if after.HighestFence != before.HighestFence || after.Floor != before.Floor || after.HolderLease != ahead.Grant.Lease {
			t.Fatalf("the target's own record changed: %+v → %+v", before, after)
		}
		fr, _ := reg.FenceRange(ctx)
		if fr.Generation <= body2gen(t, out) {
			t.Fatalf("settings lowered to the export's generation %d", fr.Generation)
		}
		if _, err := reg.Acquire(ctx, "worker-2", req("jobs/002", "x-2")); err != nil {
			t.Fatal(err)
		}
		if line, _ := reg.RevokeEpochsBelow(ctx, 0); line != 3 {
			t.Fatalf("revoked line %d after the import, want the export's 3", line)
		}

		// A target behind the export on a resource gets a floor above
		// every fence the export knows of it, and keeps the rest of its
		// record.
		behind := memstore.New()
		breg, _ := registry.New(behind, registry.DefaultConfig(epoch), clock.System{}, k)
		if _, err := breg.RaiseFloor(ctx, "jobs/floor-only", 5); err != nil {
			t.Fatal(err)
		}
		if _, err := breg.SetPolicyGeneration(ctx, "jobs/floor-only", 9); err != nil {
			t.Fatal(err)
		}
		rep, err = registry.Import(ctx, behind, strings.NewReader(out), registry.ImportOptions{})
		if err != nil || rep.Records.Raised != 1 {
			t.Fatalf("import into a target behind: %+v %v", rep, err)
		}
		info, _ := breg.Resource(ctx, "jobs/floor-only")
		srcInfo := resourceOf(t, src, "jobs/floor-only")
		if info.Floor != srcInfo.Floor || info.PolicyGeneration != 9 || info.NextFence <= srcInfo.Floor {
			t.Fatalf("target behind, after the import: %+v; want floor %d, its own policy generation 9", info, srcInfo.Floor)
		}
	})
}

// TestImportMergesTheKeyHistory: a target that knows gk-2 retired keeps
// it retired and learns gk-1 dropped; a target that never had gk-1 takes
// it as dropped, so the resurrected file is refused there; a target that
// loaded gk-1 with another secret stops the import at the key lines,
// naming the key, its history unchanged.
func TestImportMergesTheKeyHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		src := memstore.New()
		populate(t, src)
		out := export(t, src)

		ahead := memstore.New()
		if _, err := registry.AdmitGateKeys(ctx, ahead, []registry.GateKeyUse{use("gk-2", "two", grant.KeyRetired)}); err != nil {
			t.Fatal(err)
		}
		rep, err := registry.Import(ctx, ahead, strings.NewReader(out), registry.ImportOptions{})
		if err != nil || rep.Keys.Added != 1 || rep.Keys.Kept != 1 {
			t.Fatalf("import into a target ahead on gk-2: %+v %v", rep.Keys, err)
		}
		slot, _ := ahead.ReadKeyHistory(ctx)
		if k, _ := slot.History.Lookup("gk-2"); k.State != grant.KeyRetired {
			t.Fatalf("gk-2 lowered to %s", k.State)
		}
		if k, _ := slot.History.Lookup("gk-1"); k.State != registry.KeyDropped {
			t.Fatalf("gk-1 imported as %s", k.State)
		}

		fresh := memstore.New()
		if _, err := registry.Import(ctx, fresh, strings.NewReader(out), registry.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := registry.AdmitGateKeys(ctx, fresh, issue43F3); !errors.Is(err, registry.ErrKeyReused) {
			t.Fatalf("the resurrected file on the store switched to: %v", err)
		}

		other := memstore.New()
		if _, err := registry.AdmitGateKeys(ctx, other, []registry.GateKeyUse{use("gk-1", "another", grant.KeyActive)}); err != nil {
			t.Fatal(err)
		}
		before, _ := other.ReadKeyHistory(ctx)
		rep, err = registry.Import(ctx, other, strings.NewReader(out), registry.ImportOptions{})
		if !errors.Is(err, registry.ErrKeyReused) || !strings.Contains(err.Error(), "gk-1") || rep.Records.Added != 0 {
			t.Fatalf("import into a target with gk-1 under another secret: %+v %v", rep, err)
		}
		if after, _ := other.ReadKeyHistory(ctx); after.ModRev != before.ModRev {
			t.Fatal("a refused import changed the key history")
		}
	})
}

func resourceOf(t *testing.T, store registry.Store, resource string) wire.ResourceInfo {
	t.Helper()
	k, _ := testKey(t)
	reg, _ := registry.New(store, registry.DefaultConfig(epoch), clock.System{}, k)
	info, err := reg.Resource(context.Background(), resource)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// body2gen is the fence generation in an export's settings line.
func body2gen(t *testing.T, export string) uint64 {
	t.Helper()
	var gen uint64
	line := strings.Split(export, "\n")[1]
	if _, err := fmt.Sscanf(line[strings.Index(line, `"fenceGeneration":`):], `"fenceGeneration":%d`, &gen); err != nil {
		t.Fatalf("settings line %q: %v", line, err)
	}
	return gen
}

func TestImportRefusesABrokenExport(t *testing.T) {
	ctx := context.Background()
	head := `{"kind":"header","schema":"fencegateExport.v1","revision":9}` + "\n"
	rec := `{"kind":"record","resource":"jobs/a","record":{"highestFence":4}}` + "\n"
	for name, c := range map[string]struct {
		export string
		line   int
	}{
		"no header":           {rec, 1},
		"another schema":      {`{"kind":"header","schema":"fencegateExport.v9"}` + "\n", 1},
		"an unknown field":    {head + `{"kind":"record","resource":"jobs/a","record":{"highestFence":4,"lowestFence":1}}` + "\n", 2},
		"a broken record":     {head + `{"kind":"record","resource":"jobs/a","record":{"highestFence":1,"holder":{"grant":{"fenceToken":5},"paramsDigest":"","expiresAtMs":0}}}` + "\n", 2},
		"a bad resource name": {head + `{"kind":"record","resource":"../etc","record":{}}` + "\n", 2},
		"two headers":         {head + head, 2},
		"counts that differ":  {head + rec + `{"kind":"end","records":2}` + "\n", 3},
		"keys counted wrong":  {head + rec + `{"kind":"end","keys":1,"records":1}` + "\n", 3},
		"a bad key":           {head + `{"kind":"key","key":{"keyId":"gk-1","gate":"g","digest":"sha256:00","state":"active"}}` + "\n", 2},
		"a key line, no key":  {head + `{"kind":"key"}` + "\n", 2},
		"data after the end":  {head + rec + `{"kind":"end","records":1}` + "\n" + rec, 4},
		"a misfiled entry":    {head + `{"kind":"request","owner":"a","requestId":"r1","entry":{"grant":{"owner":"b","requestId":"r1"},"paramsDigest":"","state":"HELD","endedAtMs":0}}` + "\n", 2},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := registry.Import(ctx, memstore.New(), strings.NewReader(c.export), registry.ImportOptions{})
			if !errors.Is(err, wire.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("line %d", c.line)) {
				t.Fatalf("err = %v, want INVALID naming line %d", err, c.line)
			}
		})
	}
}
