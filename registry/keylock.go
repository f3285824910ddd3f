package registry

import (
	"context"
	"sync"
)

// keyLocks serializes this Registry's compare-and-swaps per resource. They
// would be correct without it (the store compares revisions), but callers
// in one process racing on one record only fail each other's compares; in
// line, each decides on the record the previous one wrote. Contention
// between replicas is still settled by the store.
type keyLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	sem  chan struct{} // one token: held while a caller works on the key
	refs int
}

// lock waits for key's token or ctx's end; the returned func releases it.
func (k *keyLocks) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = make(map[string]*keyLock)
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{sem: make(chan struct{}, 1)}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	select {
	case l.sem <- struct{}{}:
		return func() { <-l.sem; k.done(key, l) }, nil
	case <-ctx.Done():
		k.done(key, l)
		return nil, ctx.Err()
	}
}

func (k *keyLocks) done(key string, l *keyLock) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if l.refs--; l.refs == 0 {
		delete(k.locks, key)
	}
}
