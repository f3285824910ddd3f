// The faults that act on links: one link black-holed, slowed or reset
// (a worker's to a replica or a service, a replica's to a store member),
// or the peer link between two store members cut.

package chaos

import (
	"time"

	"github.com/fencegate/fencegate/chaos/record"
)

// linkFault black-holes, slows or resets one link: a worker's link to a
// replica or a service, a replica's link to a store member, or (for a
// partition) the peer link between two store members.
func (f *faulter) linkFault(kind string) {
	if kind == FaultPartition && f.intn(4) == 0 {
		f.peerPartition()
		return
	}
	px := f.e.links[f.intn(len(f.e.links))]
	var lf LinkFault
	var d time.Duration
	switch kind {
	case FaultPartition:
		lf, d = LinkFault{Blackhole: true}, f.ms(1000, 4000)
	case FaultDelay:
		lf, d = LinkFault{Delay: f.ms(50, 400)}, f.ms(2000, 5000)
	case FaultDrop:
		lf, d = LinkFault{DropP: 0.3}, f.ms(2000, 4000)
	}
	call := record.Now()
	px.Set("", lf)
	time.Sleep(d)
	px.Set("", LinkFault{})
	f.note(kind, call, "%s %+v for %s", px.Name(), lf, d)
}

func (f *faulter) peerPartition() {
	if !f.storeBusy.TryLock() {
		return
	}
	defer f.storeBusy.Unlock()
	names := f.e.coord.Names()
	i := f.intn(len(names))
	a, b := names[i], names[(i+1+f.intn(len(names)-1))%len(names)]
	d := f.ms(1000, 4000)
	call := record.Now()
	f.e.coord.Cut(a, b, true)
	time.Sleep(d)
	f.e.coord.Cut(a, b, false)
	f.note(FaultPartition, call, "peer %s|%s for %s", a, b, d)
}
