// Package chaos is fencegate's chaos suite: the real system under real
// faults, with a checked history.
//
// One run (Run) starts a three-member etcd cluster of `etcd` processes
// (Debian's etcd-server), or with Config.Backend BackendZooKeeper a
// three-member ZooKeeper ensemble (Debian's jar, zktest.PrepareEnsemble),
// behind one Coordinator interface (coord.go), two `fencegate serve`
// replicas on it, two resource services (chaosproc service: the gate on
// PostgreSQL, a business table guarded by the coverage trigger) and 8–16
// worker processes (chaosproc worker: acquire, write 1–3 segments, drain,
// release, over and over on a few shared resources). Every connection
// between two parties goes through a TCP proxy of its own on loopback (a
// worker to each replica and each service, a replica to each store
// member, a store member to each peer: etcd's peer port, ZooKeeper's
// quorum port), so a link can be black-holed, slowed or reset.
//
// The seed draws the faults: workers frozen with SIGSTOP past their TTL
// (most often while holding a built envelope, the spec's Worker A),
// serve replicas and store members killed with SIGKILL and restarted, the
// leader taken from its peers, partitions, delays and resets of single
// links, a worker's clock stepped forwards or backwards, and once per run
// a snapshot saved (etcdctl, or a copy of a ZooKeeper follower's data
// directory) and, later, the whole cluster restored from it, so the
// registry forgets every grant since and hands out fences the resources
// have already seen. On ZooKeeper, members and serve replicas are also
// frozen with SIGSTOP, and each of those kinds is injected at least once
// per run, however short. The orchestrator then acts as the operator of
// docs/operations.md: for a paused resource it raises the registry's
// floor and policy generation and resumes the gate.
//
// Every process records what it saw with real timestamps (package
// record): each registry answer, each write, each gate decision, each
// fault, restore, repair and resume. Check turns the histories into
// porcupine operations over a model of one resource (the registry's fence
// register and lease holder, the gate's highestFence, segment and pause)
// and asks porcupine v1.3.1 whether they are linearizable, and counts
// directly, from the histories and the database: stale accepts, a fence
// reused across grants, a request ID answered by two grants, receipts
// without their business row and the reverse, and pauses without an
// unrepaired restore. The mutant run (Config.Mutant: the services apply
// lease-only, a flag of the chaos binary only) must be flagged Illegal.
//
// The test (chaos_test.go) runs only with FENCEGATE_CHAOS=1; see
// docs/guarantees.md for the commands and the figures.
package chaos
