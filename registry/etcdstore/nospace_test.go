// This file proves that a full embedded etcd is a handled state: from
// the space watch's high-water mark the registry refuses new grants with
// STORE_FULL while renewals, releases, status and listings go on; at
// etcd's own NOSPACE it refuses what etcd refuses (a release puts a
// record) with the same code and still reads; and once the sweep, a
// compaction and a defragmentation bring the file back under the quota it
// disarms the alarm and grants resume by themselves. No grant is lost
// (every grant answered is there to query, every refusal granted nothing,
// and a write etcd applied but answered NOSPACE is answered as granted)
// and no fence is handed out twice.
package etcdstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/wire"
)

// noSpaceQuotaBytes is the test member's quota, 2 MiB: a few thousand
// lock cycles fill it.
const noSpaceQuotaBytes = 2 << 20

type noSpaceRig struct {
	t       *testing.T
	ctx     context.Context
	em      *Embedded
	space   *Space
	clock   *fakeclock.Clock
	guarded *registry.Registry // over the store the space watch guards, as serve runs
	raw     *registry.Registry // over the same keys unguarded: what etcd alone refuses
	// fences is every fence granted per resource, in order; granted every
	// request ID answered with a grant.
	fences  map[string][]uint64
	granted map[string]uint64
}

func newNoSpaceRig(t *testing.T) *noSpaceRig {
	ctx := context.Background()
	em, mc, c, inproc := startTestMember(t, EmbeddedOptions{UnsafeNoFsync: true, QuotaBytes: noSpaceQuotaBytes, CompactionRetention: time.Second})
	// The marks sit lower than serve's: at a 2 MiB quota a jump of the
	// backend file as bbolt grows it (a few hundred KiB) would otherwise
	// reach etcd's own alarm between two polls.
	space, err := NewSpace(mc, SpaceOptions{Recover: true, HighWater: 0.6, LowWater: 0.5, DefragIntervalMin: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rig := &noSpaceRig{t: t, ctx: ctx, em: em, clock: fakeclock.New(time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)),
		space: space, fences: map[string][]uint64{}, granted: map[string]uint64{}}
	rig.guarded = storetest.NewRegistry(t, New(c, "/ns/", inproc).GuardSpace(rig.space), rig.clock)
	rig.raw = storetest.NewRegistry(t, New(c, "/ns/", inproc), rig.clock)
	return rig
}

// startTestMember starts an embedded member for one test and returns it
// with a client over gRPC and serve's in-process client (and the store
// option that goes with it), all closed when the test ends.
func startTestMember(t testing.TB, o EmbeddedOptions) (*Embedded, *clientv3.Client, *clientv3.Client, Option) {
	t.Helper()
	em, err := StartEmbedded(context.Background(), t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	mc, err := em.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mc.Close() })
	ic, in := em.InProcess()
	t.Cleanup(func() { ic.Close() })
	return em, mc, ic, in
}

func nsReq(resource, id string) wire.AcquireRequest {
	return wire.AcquireRequest{Resource: resource, OperationID: "op-" + id, OperationClass: "test", RequestID: id, TTLMs: 30_000}
}

// cycle acquires resource under id and releases it; it returns the
// acquire's error, recording every grant.
func (r *noSpaceRig) cycle(reg *registry.Registry, resource, id string) error {
	is, err := reg.Acquire(r.ctx, "worker", nsReq(resource, id))
	if err != nil {
		return err
	}
	r.note(id, is.Grant)
	return reg.Release(r.ctx, "worker", resource, is.Grant.Lease)
}

func (r *noSpaceRig) note(id string, g *grant.Grant) {
	if fs := r.fences[g.Resource]; len(fs) > 0 && g.FenceToken <= fs[len(fs)-1] {
		r.t.Fatalf("%s: fence %d after %d: a fence handed out again", g.Resource, g.FenceToken, fs[len(fs)-1])
	}
	r.fences[g.Resource] = append(r.fences[g.Resource], g.FenceToken)
	r.granted[id] = g.FenceToken
}

func (r *noSpaceRig) check() {
	r.t.Helper()
	if err := r.space.Check(r.ctx); err != nil {
		r.t.Fatalf("space check: %v", err)
	}
}

// mustBeFull wants err to be STORE_FULL, and the refused request to hold
// nothing.
func (r *noSpaceRig) mustBeFull(err error, id string) {
	r.t.Helper()
	if !errors.Is(err, wire.ErrStoreFull) || wire.CodeOf(err) != "STORE_FULL" {
		r.t.Fatalf("want STORE_FULL, got %v", err)
	}
	if id == "" {
		return
	}
	if _, qerr := r.guarded.QueryRequest(r.ctx, "worker", id); !errors.Is(qerr, wire.ErrNotFound) {
		r.t.Fatalf("a refused acquire %s holds something: %v", id, qerr)
	}
}

func TestNoSpaceIsHandled(t *testing.T) {
	r := newNoSpaceRig(t)
	held, err := r.guarded.Acquire(r.ctx, "worker", nsReq("held", "held-1"))
	if err != nil {
		t.Fatal(err)
	}
	r.note("held-1", held.Grant)
	long := strings.Repeat("x", 200)
	// 1. Cycles on ever new resources until the high-water mark.
	refusedID, n := "", 0
	for ; refusedID == "" && n < 20_000; n++ {
		if n%5 == 0 {
			r.check()
		}
		id := fmt.Sprint("c-", n)
		if err := r.cycle(r.guarded, fmt.Sprintf("res/%d/y%s", n%400, long[:n%200]), id); err != nil {
			r.mustBeFull(err, id)
			refusedID = id
		}
	}
	if st := r.space.Status(); refusedID == "" || !st.Low || st.NoSpace {
		t.Fatalf("after %d cycles: refused %q, space %+v; want grants refused below etcd's own alarm", n, refusedID, st)
	}
	// Renewals, releases, status and listings go on.
	if _, err := r.guarded.Renew(r.ctx, "worker", "held", held.Grant.Lease); err != nil {
		t.Fatalf("renew while space is low: %v", err)
	}
	if q, err := r.guarded.QueryRequest(r.ctx, "worker", "c-0"); err != nil || q.Grant.FenceToken != r.granted["c-0"] {
		t.Fatalf("status while space is low: %v", err)
	}
	if l, err := r.guarded.ListLocks(r.ctx, "res/", "", 10, nil); err != nil || len(l.Locks) != 10 {
		t.Fatalf("listing while space is low: %d, %v", len(l.Locks), err)
	}
	// 2. Filler past etcd's quota: etcd raises NOSPACE and refuses every
	// put; a release (which puts the record) is refused with the same
	// code, and reads go on.
	fill(t, r)
	if err := r.space.Poll(r.ctx); err != nil {
		t.Fatal(err)
	}
	if st := r.space.Status(); !st.NoSpace || !st.Low {
		t.Fatalf("after the filler: %+v, want NOSPACE", st)
	}
	r.mustBeFull(r.raw.Release(r.ctx, "worker", "held", held.Grant.Lease), "")
	if q, err := r.raw.QueryRequest(r.ctx, "worker", "held-1"); err != nil || q.Status.State != grant.StateHeld {
		t.Fatalf("the lease whose release was refused: %v %v", q.Status, err)
	}
	_, err = r.raw.Acquire(r.ctx, "worker", nsReq("res/new", "under-nospace"))
	r.mustBeFull(err, "under-nospace")
	// Every grant answered is there, with its fence.
	for id, fence := range r.granted {
		if q, err := r.guarded.QueryRequest(r.ctx, "worker", id); err != nil || q.Grant.FenceToken != fence {
			t.Fatalf("grant %s (fence %d) lost: %v", id, fence, err)
		}
	}
	// 3. Space comes back: the filler goes, the entries pass their
	// retention and the sweep deletes them (deletes are what etcd takes
	// under NOSPACE); the watch compacts, defragments and disarms.
	unfill(t, r)
	r.clock.Advance(time.Duration(r.guarded.Config().RequestRetentionMs+60_000) * time.Millisecond)
	if swept, err := r.guarded.SweepRequests(r.ctx); err != nil || swept < len(r.granted)-2 {
		t.Fatalf("sweep under NOSPACE: deleted %d of %d, %v", swept, len(r.granted), err)
	}
	r.check()
	if st := r.space.Status(); st.NoSpace || st.Low || st.Defrags == 0 {
		t.Fatalf("after recovery: %+v, want the alarm disarmed and grants back", st)
	}
	// Grants resume, every fence above every fence granted before.
	i := 0
	for resource, fs := range r.fences {
		if resource == "held" {
			continue
		}
		i++
		if err := r.cycle(r.guarded, resource, fmt.Sprint("after-", i)); err != nil {
			t.Fatalf("acquire %s after recovery: %v", resource, err)
		}
		if got := r.fences[resource]; got[len(got)-1] <= fs[len(fs)-1] {
			t.Fatalf("%s: fence %d after recovery, not above %d", resource, got[len(got)-1], fs[len(fs)-1])
		}
	}
}

// fill puts 64 KiB values until etcd refuses one for lack of space. etcd
// learns its file's size when it commits its write batch (every 100 ms),
// so the puts pause for it now and then.
func fill(t *testing.T, r *noSpaceRig) {
	c, err := r.em.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v := string(bytes.Repeat([]byte{'f'}, 64<<10))
	for i := 0; i < 256; i++ {
		if i%4 == 3 {
			time.Sleep(120 * time.Millisecond)
		}
		if _, err := c.Put(r.ctx, fmt.Sprint("/filler/", i), v); err != nil {
			if !errors.Is(fullError(err), wire.ErrStoreFull) {
				t.Fatalf("filler: %v", err)
			}
			return
		}
	}
	t.Fatal("256 filler values of 64 KiB did not fill a 2 MiB quota")
}

func unfill(t *testing.T, r *noSpaceRig) {
	c, err := r.em.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Delete(r.ctx, "/filler/", clientv3.WithPrefix()); err != nil {
		t.Fatalf("delete the filler under NOSPACE: %v", err)
	}
}

// appliedFull is etcd's crossing write as its quota applier answers it
// (etcdserver/apply/quota.go): the commit is applied, and the answer is
// NOSPACE all the same. applied false is the negative control: refused
// and not applied.
type appliedFull struct {
	registry.Store
	applied bool
}

func (s appliedFull) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	if !registry.CreatesEntries(w) {
		return s.Store.Commit(ctx, w)
	}
	if s.applied {
		if res, err := s.Store.Commit(ctx, w); err != nil || !res.OK {
			return res, err
		}
	}
	return registry.CommitResult{}, fmt.Errorf("etcdstore: commit: %w: etcdserver: mvcc: database space exceeded", wire.ErrStoreFull)
}

// A grant etcd applied while answering NOSPACE is answered as granted
// (the registry reads it back), not refused and left for nobody; one it
// did not apply is refused, and holds nothing.
func TestNoSpaceAnswerOfAnAppliedGrant(t *testing.T) {
	for _, applied := range []bool{true, false} {
		reg := storetest.NewRegistry(t, appliedFull{Store: freshStore(t), applied: applied}, nil)
		is, err := reg.Acquire(context.Background(), "worker", nsReq("r/1", "a1"))
		_, qerr := reg.QueryRequest(context.Background(), "worker", "a1")
		switch {
		case applied && (err != nil || qerr != nil || is.Grant == nil):
			t.Fatalf("applied: acquire %v, query %v; want the grant answered", err, qerr)
		case !applied && (!errors.Is(err, wire.ErrStoreFull) || !errors.Is(qerr, wire.ErrNotFound)):
			t.Fatalf("not applied: acquire %v, query %v; want STORE_FULL and nothing held", err, qerr)
		}
	}
}
