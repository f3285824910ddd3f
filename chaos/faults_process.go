// The faults that act on processes: a worker frozen past its TTL (the
// spec's Worker A), a serve replica killed and restarted or frozen and
// thawed, a worker's clock stepped.

package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/chaos/record"
)

// workerStop freezes a worker for longer than its TTL plus lock-delay, so
// another owner can be granted and write meanwhile. Two times in three it
// picks the holder of a resource (asked of the registry): a holder spends
// most of its lease computing segments, so it is usually frozen with a
// built envelope in hand, the spec's Worker A.
func (f *faulter) workerStop(ctx context.Context) {
	w := f.e.workers[f.intn(len(f.e.workers))]
	if f.intn(3) > 0 {
		if h := f.holder(ctx); h != nil {
			w = h
		}
	}
	if w.Frozen() || w.Freeze() != nil {
		return
	}
	d := time.Duration(f.e.cfg.TTLMs)*time.Millisecond + time.Second + f.ms(500, 3000)
	call := record.Now()
	time.Sleep(d)
	w.Thaw()
	f.note(FaultWorkerStop, call, "%s for %s", w.Name, d)
}

// holder returns the worker holding a random resource, semaphore slot or
// read/write lock (its writer), or nil.
func (f *faulter) holder(ctx context.Context) *Proc {
	rs := append(append(f.e.cfg.resources(), f.e.cfg.slots(f.e.cfg.Permits)...), f.e.cfg.rwlocks()...)
	res := rs[f.intn(len(rs))]
	c := f.e.admin[f.intn(len(f.e.admin))]
	actx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	info, err := c.Resource(actx, res)
	if err != nil {
		return nil
	}
	for _, w := range f.e.workers {
		if w.Name == info.HolderOwner {
			return w
		}
	}
	return nil
}

// serveKill kills one replica with SIGKILL while the other serves (a
// required one waits until the other does).
func (f *faulter) serveKill(must bool) {
	p := f.otherServes(must)
	if p == nil {
		return
	}
	p.hold()
	defer p.release()
	call := record.Now()
	p.proc.Kill()
	time.Sleep(f.ms(1000, 3000))
	if err := p.proc.Start(); err != nil {
		f.e.cfg.Logf("restart %s: %v", p.name, err)
	}
	f.note(FaultServeKill, call, "%s", p.name)
}

// serveStop freezes one replica with SIGSTOP for 1–8 s while the other
// serves: its connections hang, its ZooKeeper session may expire, and
// the work it had in flight (a decision read, a commit sent) resumes late.
func (f *faulter) serveStop(must bool) {
	p := f.otherServes(must)
	if p == nil {
		return
	}
	d := f.ms(1000, 8000)
	call := record.Now()
	if p.proc.Freeze() != nil {
		return
	}
	time.Sleep(d)
	p.proc.Thaw()
	f.note(FaultServeStop, call, "%s for %s", p.name, d)
}

// otherServes draws a replica while every replica is running and
// unfrozen; nil otherwise (a required fault waits for that, must).
func (f *faulter) otherServes(must bool) *party {
	var p *party
	f.turn(must, func() bool {
		p = f.e.serves[f.intn(len(f.e.serves))]
		for _, o := range f.e.serves {
			if !o.proc.Running() || o.proc.Frozen() {
				p = nil
			}
		}
		return p != nil
	})
	return p
}

// clockJump steps one worker's clock forwards or backwards for a while.
func (f *faulter) clockJump() {
	w := f.e.workers[f.intn(len(f.e.workers))]
	off := f.ms(500, 5000)
	if f.intn(2) == 0 {
		off = -off
	}
	d := f.ms(3000, 8000)
	call := record.Now()
	if w.Send(fmt.Sprintf("clock %d", off.Milliseconds())) != nil {
		return
	}
	time.Sleep(d)
	w.Send("clock 0")
	f.note(FaultClockJump, call, "%s by %s for %s", w.Name, off, d)
}
