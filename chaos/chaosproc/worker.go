package chaosproc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fencegate/fencegate/chaos/record"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/wire"
)

// Worker limits, sized for the suite's 3 s leases (as the ledger example's
// worker for its short demo leases): a registry call gives up after
// 500 ms, the local deadline keeps 500 ms for clock rate error, and a
// release (which first waits out the proofs of unsettled writes) is
// given 5 s.
const (
	workerCallTimeout  = 500 * time.Millisecond
	workerExpiryMargin = 500 * time.Millisecond
	releaseTimeout     = 5 * time.Second
	idleMax            = 300 * time.Millisecond
)

// WorkerConfig is one worker process's job.
type WorkerConfig struct {
	Name      string
	Registry  client.Transport // a recording *Transport over the replicas
	Services  []*ServiceClient // the resource service replicas
	Resources []string
	// Semaphores are counting semaphores of Permits permits each, chosen
	// as often as each resource: a permit is a lease on one slot, written
	// through the slot's gate as any lease. Optional.
	Semaphores []string
	Permits    uint64
	// RWLocks are read/write locks, chosen as often as each resource: a
	// writer (an exclusive lease on the lock's name) writes through its
	// gate as any lease and now and then downgrades to a reader; a reader
	// (wire.ModeRead) reads, and now and then presents its grant at the
	// gate as a mutation, which the gate must refuse (READ_GRANT).
	// Optional.
	RWLocks     []string
	TTL, Wait   time.Duration
	SegmentsMax int           // each operation writes 1..SegmentsMax segments
	ThinkMax    time.Duration // "computing" a segment between its envelope and its send
	Seed        uint64
	Clock       *OffsetClock
	Rec         *record.Writer
}

type worker struct {
	cfg WorkerConfig
	rng *rand.Rand
	s   *client.Session
}

// RunWorker acquires, writes a few segments, drains and releases, over and
// over on randomly chosen resources, until ctx ends.
func RunWorker(ctx context.Context, cfg WorkerConfig) error {
	if cfg.SegmentsMax < 1 || len(cfg.Services) == 0 || len(cfg.Resources) == 0 {
		return errors.New("chaosproc: worker needs services, resources and SegmentsMax >= 1")
	}
	if len(cfg.Semaphores) > 0 && cfg.Permits < wire.PermitsMin {
		return errors.New("chaosproc: semaphores need Permits >= 1")
	}
	w := &worker{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 1))}
	w.s = client.NewSession(cfg.Registry, client.Options{
		Clock: cfg.Clock, Rand: rand.New(rand.NewPCG(cfg.Seed, 2)),
		CallTimeout: workerCallTimeout, ExpiryMargin: workerExpiryMargin,
	})
	for op := 1; ctx.Err() == nil; op++ {
		w.operation(ctx, fmt.Sprintf("%s-op%d", cfg.Name, op))
		w.sleep(ctx, time.Duration(w.rng.Int64N(int64(idleMax))))
	}
	return nil
}

// mismatchOneIn: one semaphore acquire in mismatchOneIn names N+1
// permits without waiting, which the registry must refuse
// (PERMITS_MISMATCH: N is recorded with the semaphore).
const mismatchOneIn = 16

// Read/write lock choices: one acquire in readOneIn asks for a reader's
// lease, one writer in downgradeOneIn downgrades after its writes, and
// one reader in probeOneIn presents its grant at the gate as a mutation.
const (
	readOneIn      = 2
	downgradeOneIn = 3
	probeOneIn     = 2
)

// request draws the next operation's acquire: a resource, a permit of a
// semaphore (Permits N, or N+1 now and then), or a read/write lock's
// writer or reader.
func (w *worker) request(opID string) wire.AcquireRequest {
	req := wire.AcquireRequest{OperationID: opID, OperationClass: "settle", TTLMs: uint64(w.cfg.TTL.Milliseconds()), WaitMs: uint64(w.cfg.Wait.Milliseconds())}
	i := w.rng.IntN(len(w.cfg.Resources) + len(w.cfg.Semaphores) + len(w.cfg.RWLocks))
	if i < len(w.cfg.Resources) {
		req.Resource = w.cfg.Resources[i]
		return req
	}
	if i -= len(w.cfg.Resources); i >= len(w.cfg.Semaphores) {
		req.Resource = w.cfg.RWLocks[i-len(w.cfg.Semaphores)]
		if w.rng.IntN(readOneIn) == 0 {
			req.Mode = wire.ModeRead
		}
		return req
	}
	req.Resource, req.Permits = w.cfg.Semaphores[i], w.cfg.Permits
	if w.rng.IntN(mismatchOneIn) == 0 {
		req.Permits, req.WaitMs = w.cfg.Permits+1, 0
	}
	return req
}

// operation is one lease: acquire, write its segments in order (a
// reader reads instead; a read/write lock's writer may downgrade and read
// on), release.
func (w *worker) operation(ctx context.Context, opID string) {
	req := w.request(opID)
	l, err := w.s.Acquire(ctx, req)
	var pe *client.PendingError
	if errors.As(err, &pe) { // an earlier acquire has no final answer: wait it out
		w.sleep(ctx, time.Until(pe.ReusableAt))
		return
	}
	if err != nil {
		return
	}
	if req.Mode != wire.ModeRead {
		w.writeSegments(ctx, l, opID)
		if slices.Contains(w.cfg.RWLocks, req.Resource) && w.rng.IntN(downgradeOneIn) == 0 {
			l = w.downgrade(ctx, l)
		}
	}
	if _, reader := wire.ReadOf(l.Grant().Resource); reader {
		w.read(ctx, l, req.Resource, opID)
	}
	// Release drains: it waits until no unsettled write can be accepted
	// any more (a release frees the resource at once, a proof outlives it).
	rctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	l.Release(rctx)
}

// writeSegments writes 1..SegmentsMax segments of the operation under l,
// in order, until one does not stand.
func (w *worker) writeSegments(ctx context.Context, l *client.Lease, opID string) {
	segs := 1 + w.rng.IntN(w.cfg.SegmentsMax)
	for seq := uint64(1); seq <= uint64(segs) && ctx.Err() == nil; seq++ {
		payload := fmt.Sprintf("%s seg %d by %s", opID, seq, w.cfg.Name)
		m, err := l.Envelope(seq, PayloadDigest(payload))
		if err != nil {
			break
		}
		// Compute the segment. A SIGSTOP here is the spec's Worker A: it
		// wakes with a built envelope and sends it.
		w.sleep(ctx, time.Duration(w.rng.Int64N(int64(w.cfg.ThinkMax)+1)))
		if !w.send(ctx, l, &m, payload) {
			break
		}
	}
}

// downgrade turns l, a read/write lock's write lease, into a reader's
// lease, asking until an answer or the lease's TTL: the reader's lease,
// or l itself when the downgrade failed (l then builds no envelope and is
// released).
func (w *worker) downgrade(ctx context.Context, l *client.Lease) *client.Lease {
	dctx, cancel := context.WithTimeout(ctx, w.cfg.TTL)
	defer cancel()
	r, err := w.s.Downgrade(dctx, l)
	if err != nil {
		return l
	}
	return r
}

// read holds a reader's lease l on the read/write lock name for a while
// ("reading"), and now and then presents its grant at the gate as a
// mutation, naming the lock or the reader's own resource: the gate must
// refuse it (READ_GRANT) and change nothing.
func (w *worker) read(ctx context.Context, l *client.Lease, name, opID string) {
	w.sleep(ctx, time.Duration(w.rng.Int64N(int64(w.cfg.ThinkMax)+1)))
	if w.rng.IntN(probeOneIn) != 0 || ctx.Err() != nil {
		return
	}
	payload := fmt.Sprintf("%s read grant presented by %s", opID, w.cfg.Name)
	m, err := l.Envelope(1, PayloadDigest(payload))
	if err != nil {
		return
	}
	if w.rng.IntN(2) == 0 {
		m.Resource = name // the lock's gate, not the reader's resource
	}
	svc := w.cfg.Services[w.rng.IntN(len(w.cfg.Services))]
	if o := w.write(ctx, svc, &m, payload); o != record.ResultUnknown {
		l.Settle(m.SegmentSeq, gate.Outcome(o))
	}
}

// send writes one segment and settles it with the lease; true when it
// stands (accepted or replayed).
func (w *worker) send(ctx context.Context, l *client.Lease, m *gate.Mutation, payload string) bool {
	svc := w.cfg.Services[w.rng.IntN(len(w.cfg.Services))]
	outcome := w.write(ctx, svc, m, payload)
	if outcome != record.ResultUnknown {
		l.Settle(m.SegmentSeq, gate.Outcome(outcome))
		return outcome == string(gate.Accepted) || outcome == string(gate.Replayed)
	}
	resolver := &client.Resolver{Receipts: client.ReceiptQuerierFunc(svc.QueryOperation)}
	res, err := resolver.Resolve(ctx, client.UnknownOf(*m))
	if err != nil {
		return false
	}
	switch res.Verdict {
	case gate.VerdictAccepted:
		l.Settle(m.SegmentSeq, gate.Accepted)
		return true
	case gate.VerdictProvenAbsent: // never accepted, and never will be under this fence
		l.Settle(m.SegmentSeq, gate.StaleOwner)
		return false
	}
	// UNDETERMINED while the lease may still be held: send the same write
	// (fence, segment, payload) again with the lease's current proof; the
	// gate answers REPLAYED if the first copy landed. The lease builds it,
	// so its proof counts in Release's drain (client.Refresh's would not).
	again, err := l.Envelope(m.SegmentSeq, m.PayloadDigest)
	if err != nil {
		return false
	}
	o := w.write(ctx, svc, &again, payload)
	if o == record.ResultUnknown {
		return false // unsettled: Release waits its proof out
	}
	l.Settle(m.SegmentSeq, gate.Outcome(o))
	return o == string(gate.Accepted) || o == string(gate.Replayed)
}

// write sends one copy and records the worker's view of its outcome.
func (w *worker) write(ctx context.Context, svc *ServiceClient, m *gate.Mutation, payload string) string {
	e := record.Event{Kind: record.KindWrite, Proc: w.cfg.Name, CallNs: record.Now(), Resource: m.Resource, Lease: m.Lease,
		Fence: m.FenceToken, Seq: m.SegmentSeq, OperationID: m.OperationID, Payload: m.PayloadDigest.String()}
	resp, err := svc.Write(ctx, m, payload)
	e.RetNs, e.Result, e.Highest, e.Detail = record.Now(), resp.Outcome, resp.Highest, resp.Reason
	if err != nil {
		e.Result, e.Detail = record.ResultUnknown, err.Error()
	}
	w.cfg.Rec.Emit(e)
	return e.Result
}

func (w *worker) sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
