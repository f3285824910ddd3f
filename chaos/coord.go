package chaos

import (
	"context"
	"fmt"
)

// Coordination backends a run can put the registry on (Config.Backend).
const (
	BackendEtcd      = "etcd"      // three `etcd` processes (Debian's etcd-server): EtcdCluster
	BackendZooKeeper = "zookeeper" // three ZooKeeper members (Debian's zookeeper jar): ZooKeeperEnsemble
)

// Coordinator is the registry's coordination service in a run: a
// three-member cluster of real processes that the faults act on. Members
// have names (etcd1…, zk1…); the orchestrator probes them directly, the
// serve replicas reach them through link proxies of the run.
type Coordinator interface {
	// Engine is the backend's name (BackendEtcd, BackendZooKeeper).
	Engine() string
	// ClientAddrs returns each member's client address (host:port), in
	// the order of Names.
	ClientAddrs() []string
	// ServeArgs returns serve's flags for a store reached at addrs
	// (proxies of ClientAddrs, in the same order).
	ServeArgs(addrs []string) []string
	// Names returns the members' names.
	Names() []string
	// Leader returns the member every live member agrees leads, or an
	// error while none is settled.
	Leader(ctx context.Context) (string, error)
	// KillMember kills member name with SIGKILL; RestartMember starts a
	// killed member again on its data (nothing when it runs).
	KillMember(name string)
	RestartMember(name string) error
	// FreezeMember stops member name with SIGSTOP; ThawMember sends
	// SIGCONT (nothing when it is not frozen).
	FreezeMember(name string) error
	ThawMember(name string)
	// LoseLeader takes the leader name away from its peers so that the
	// others elect a new one (on), or gives it back (off).
	LoseLeader(name string, on bool)
	// Cut black-holes the peer traffic between members a and b (both
	// ways), or heals it; Isolate cuts member name from every other.
	Cut(a, b string, on bool)
	Isolate(name string, on bool)
	// Close closes the coordinator's proxies and clients; the processes
	// are the run's Procs to kill.
	Close()
}

// Restorer is a Coordinator whose whole state can be saved and later
// restored, as an operator restoring a backup would: the registry then
// forgets every grant since the save and hands out fences the resources
// have already seen. A run whose coordinator is one saves early and
// restores late (faulter.snapshotAndRestore).
type Restorer interface {
	// Snapshot saves the cluster's state to path, which holds every
	// commit made before the call (the checker judges a fence granted
	// before the snapshot and again after the restore a violation).
	Snapshot(ctx context.Context, path string) error
	// Restore replaces every member's state with the one saved at path
	// and starts the members again on the same addresses.
	Restore(ctx context.Context, path string) error
	// ReplicasNeedRestart reports whether a serve replica must be
	// restarted after a Restore to reach the store again.
	ReplicasNeedRestart() bool
}

// startCoordinator starts cfg.Backend's cluster under cfg.StoreDir.
func startCoordinator(ctx context.Context, procs *Procs, cfg Config) (Coordinator, error) {
	switch cfg.Backend {
	case BackendEtcd:
		c, err := startEtcd(ctx, procs, cfg.Bins, cfg.StoreDir, cfg.Seed)
		if c == nil {
			return nil, err
		}
		return c, err
	case BackendZooKeeper:
		z, err := startZooKeeper(ctx, procs, cfg.StoreDir, cfg.Seed)
		if z == nil {
			return nil, err
		}
		return z, err
	}
	return nil, fmt.Errorf("chaos: unknown backend %q", cfg.Backend)
}
