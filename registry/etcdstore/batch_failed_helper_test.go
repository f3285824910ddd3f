// This file gives the benchmarks the group commit's count of failed
// compares. It is not a bench*_test.go file: scripts/bench-all.sh copies
// those into a base revision, which gets a stub of failedWrites when its
// batcher does not count them.
package etcdstore

// failedWrites is how many of st's grouped writes failed their compares
// (each a decision made again by its caller).
func failedWrites(st *Store) uint64 {
	if st.batch == nil {
		return 0
	}
	return st.batch.failed.Load()
}
