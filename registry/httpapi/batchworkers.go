package httpapi

import (
	"sync/atomic"
	"time"
)

// batchWorkers runs a batch's operations on goroutines that outlive one
// batch. A fresh goroutine per operation grows its stack from 8 KiB
// through the registry and the store's client on every call (8.6% of a
// cycle's CPU in runtime.newstack at 64 resources); a worker that stays
// for the next batch has its stack grown already, as net/http's
// per-connection goroutines do.
type batchWorkers struct {
	work chan func() // unbuffered: a send succeeds only to an idle worker
	n    atomic.Int64
}

// batchWorkersMax bounds the workers kept, 256: four batches of
// BatchOperationsMax in flight at once. Operations beyond run on a
// goroutine of their own, as before the pool.
const batchWorkersMax = 4 * BatchOperationsMax

// batchWorkerIdleMs is how long a worker waits for its next operation
// before it exits, 10 s: a pool sized for a burst does not outlive it by
// much.
const batchWorkerIdleMs = 10_000

func newBatchWorkers() *batchWorkers { return &batchWorkers{work: make(chan func())} }

// run runs f on an idle worker, a new one, or (above batchWorkersMax) a
// goroutine of its own; it does not wait for f.
func (p *batchWorkers) run(f func()) {
	select {
	case p.work <- f:
		return
	default:
	}
	if p.n.Add(1) > batchWorkersMax {
		p.n.Add(-1)
		go f()
		return
	}
	go p.worker(f)
}

func (p *batchWorkers) worker(f func()) {
	defer p.n.Add(-1)
	idle := time.NewTimer(batchWorkerIdleMs * time.Millisecond)
	defer idle.Stop()
	for {
		f()
		idle.Reset(batchWorkerIdleMs * time.Millisecond)
		select {
		case f = <-p.work:
		case <-idle.C:
			return
		}
	}
}
