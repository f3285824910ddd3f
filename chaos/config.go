package chaos

import (
	"fmt"
	"time"

	"github.com/fencegate/fencegate/wire"
)

// Config is one run. Zero fields take the defaults below.
type Config struct {
	// Seed decides every fault (kind, target, time, duration) and every
	// worker's choices. Required.
	Seed uint64
	// Duration is the run's time budget under load, faults included; the
	// last settleTime of it has no new faults. Optional, defaults to 60s.
	Duration time.Duration
	// Workers is the number of worker processes, 8..16. Optional,
	// defaults to 8.
	Workers int
	// Resources is how many resources the workers share. Optional,
	// defaults to 3.
	Resources int
	// Semaphores is how many counting semaphores the workers share
	// beside the resources, each with Permits permits: a worker's
	// operation takes a permit of one as often as it locks each
	// resource, and writes through the slot's gate (issue 46). Optional,
	// defaults to 1; negative for none.
	Semaphores int
	// RWLocks is how many read/write locks the workers share beside the
	// resources and semaphores: a worker's operation takes one as often
	// as it locks each resource, as a writer (writing through the lock's
	// gate, downgrading now and then) or a reader (presenting its grant
	// at the gate as a mutation now and then, which must be READ_GRANT)
	// (issue 46). Optional, defaults to 1; negative for none.
	RWLocks int
	// Permits is each semaphore's N. Optional, defaults to 2; at most
	// semSlotsMax-1 (the workers' PERMITS_MISMATCH probe names N+1).
	Permits int
	// Replicas is the number of `fencegate serve` replicas. Optional,
	// defaults to 2.
	Replicas int
	// Services is the number of resource service replicas (one gate each,
	// one PostgreSQL database). Optional, defaults to 2.
	Services int
	// TTLMs is the workers' lease TTL. Optional, defaults to 3000.
	TTLMs int
	// Mutant runs the negative control: the services apply lease-only
	// (no fence check) and the only faults are frozen workers, the story
	// the fence check exists for. The checker must flag the run.
	Mutant bool
	// RestartReplicasOnRestore restarts every serve replica after the
	// store's restore, the operator's workaround while a replica's record cache
	// could outlive a restore (fixed in the registry; docs/guarantees.md).
	// Optional, defaults to false: the replicas keep running, the harder
	// case.
	RestartReplicasOnRestore bool
	// Backend is the coordination service the registry runs on:
	// BackendEtcd or BackendZooKeeper. Optional, defaults to BackendEtcd.
	Backend string
	// Dir is the run's directory (logs, histories, data). Required.
	Dir string
	// StoreDir holds the store members' data directories (and the etcd
	// snapshot). Optional, defaults to Dir.
	StoreDir string
	// DSN is the PostgreSQL database of the services (a fresh one per
	// run). Required.
	DSN string
	// Bins are the executables. Required.
	Bins Binaries
	// Logf receives progress lines. Optional.
	Logf func(format string, args ...any)
}

// Named defaults of Config.
const (
	DurationDefault   = 60 * time.Second
	WorkersDefault    = 8
	WorkersMax        = 16
	ResourcesDefault  = 3
	SemaphoresDefault = 1
	RWLocksDefault    = 1
	PermitsDefault    = 2
	ReplicasDefault   = 2
	ServicesDefault   = 2
	TTLMsDefault      = 3000
)

// settleTime ends a run without faults: every fault is healed, every
// frozen worker thawed and every killed process restarted, so that the
// last writes and releases see a whole system.
const settleTime = 6 * time.Second

func (c Config) withDefaults() (Config, error) {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.Duration <= 0 {
		c.Duration = DurationDefault
	}
	def(&c.Workers, WorkersDefault)
	def(&c.Resources, ResourcesDefault)
	if c.Semaphores == 0 {
		c.Semaphores = SemaphoresDefault
	}
	if c.RWLocks == 0 {
		c.RWLocks = RWLocksDefault
	}
	def(&c.Permits, PermitsDefault)
	def(&c.Replicas, ReplicasDefault)
	def(&c.Services, ServicesDefault)
	def(&c.TTLMs, TTLMsDefault)
	if c.StoreDir == "" {
		c.StoreDir = c.Dir
	}
	if c.Backend == "" {
		c.Backend = BackendEtcd
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	switch {
	case c.Seed == 0:
		return c, fmt.Errorf("chaos: Config.Seed is required")
	case c.Dir == "" || c.DSN == "":
		return c, fmt.Errorf("chaos: Config.Dir and Config.DSN are required")
	case c.Permits >= semSlotsMax:
		return c, fmt.Errorf("chaos: %d permits, at most %d", c.Permits, semSlotsMax-1)
	case c.Workers > WorkersMax:
		return c, fmt.Errorf("chaos: %d workers, at most %d", c.Workers, WorkersMax)
	case c.Backend != BackendEtcd && c.Backend != BackendZooKeeper:
		return c, fmt.Errorf("chaos: backend %q: want %s or %s", c.Backend, BackendEtcd, BackendZooKeeper)
	case c.Duration < 2*settleTime:
		return c, fmt.Errorf("chaos: duration %s is shorter than %s", c.Duration, 2*settleTime)
	}
	return c, nil
}

func (c Config) resources() []string {
	var out []string
	for i := range c.Resources {
		out = append(out, fmt.Sprintf("chaos/res-%d", i+1))
	}
	return out
}

// semaphores names the run's counting semaphores.
func (c Config) semaphores() []string {
	var out []string
	for i := range max(c.Semaphores, 0) {
		out = append(out, fmt.Sprintf("chaos/sem-%d", i+1))
	}
	return out
}

// rwlocks names the run's read/write locks.
func (c Config) rwlocks() []string {
	var out []string
	for i := range max(c.RWLocks, 0) {
		out = append(out, fmt.Sprintf("chaos/rw-%d", i+1))
	}
	return out
}

// slots names the first n slots of every semaphore.
func (c Config) slots(n int) []string {
	var out []string
	for _, s := range c.semaphores() {
		for i := range n {
			out = append(out, wire.SlotResource(s, i))
		}
	}
	return out
}

// gated is every resource a gate may see: the resources, every slot of
// every semaphore (the PERMITS_MISMATCH probe's N+1st included, should a
// registry grant it), and every read/write lock (its writers' grants;
// a reader's grant is refused before any state is read).
func (c Config) gated() []string {
	return append(append(c.resources(), c.slots(c.Permits+1)...), c.rwlocks()...)
}
