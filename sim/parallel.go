package sim

import (
	"runtime"
	"sync"
)

// inParallelSlots runs one(slot, r) for every round r in [0, rounds) on up
// to parallel goroutines (0: one per core), slot naming the goroutine
// (below parallel: the index of what it keeps across its rounds, such
// as its database) and returns the results indexed
// by round, so which goroutine ran a round never shows in a result: the
// semaphore, lock-set and read/write lock rounds merge them in round
// order, and parallel
// changes only the speed.
func inParallelSlots[C any](rounds, parallel int, one func(slot, r int) C) []C {
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	results := make([]C, rounds)
	next := make(chan int)
	var wg sync.WaitGroup
	for slot := range min(parallel, max(rounds, 1)) {
		wg.Go(func() {
			for r := range next {
				results[r] = one(slot, r)
			}
		})
	}
	for r := range rounds {
		next <- r
	}
	close(next)
	wg.Wait()
	return results
}
