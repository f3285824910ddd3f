package memstore

import (
	"context"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// watcher is one Watch: a one-slot mailbox that always holds the latest
// event, so a slow reader sees the newest record, never a stale backlog.
type watcher struct {
	ch chan registry.RecordEvent
}

// Watch implements registry.Store. If the record already changed at or
// after fromRev, the current record is delivered at once.
func (s *Store) Watch(ctx context.Context, resource string, fromRev uint64) (<-chan registry.RecordEvent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := &watcher{ch: make(chan registry.RecordEvent, 1)}
	out := make(chan registry.RecordEvent)
	s.mu.Lock()
	s.watchers[resource] = append(s.watchers[resource], w)
	if rec, it, err := s.recordLocked(resource); err == nil && rec != nil && it.modRev >= fromRev {
		w.offer(registry.RecordEvent{Record: rec, ModRev: it.modRev, Revision: s.rev})
	}
	s.mu.Unlock()
	go func() {
		defer close(out)
		defer s.unwatch(resource, w)
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-w.ch:
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

// offer replaces any undelivered event with ev.
func (w *watcher) offer(ev registry.RecordEvent) {
	for {
		select {
		case w.ch <- ev:
			return
		default:
		}
		select {
		case <-w.ch:
		default:
		}
	}
}

func (s *Store) notifyLocked(resource string, rec *lockstate.Record, rev uint64) {
	for _, w := range s.watchers[resource] {
		// Each watcher gets its own copy: nobody shares a record.
		w.offer(registry.RecordEvent{Record: cloneRecord(rec), ModRev: rev, Revision: rev})
	}
}

func (s *Store) unwatch(resource string, w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := s.watchers[resource]
	for i, x := range ws {
		if x == w {
			s.watchers[resource] = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(s.watchers[resource]) == 0 {
		delete(s.watchers, resource)
	}
}
