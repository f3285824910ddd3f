package etcdstore

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegate/fencegate/registry"
)

// Watch implements registry.Store over an etcd watch from fromRev. Events
// are coalesced to the latest; the channel closes when ctx ends or the
// watch fails (for example fromRev was compacted), and the registry then
// falls back to reading.
func (s *Store) Watch(ctx context.Context, resource string, fromRev uint64) (<-chan registry.RecordEvent, error) {
	ctx, cancel := context.WithCancel(ctx)
	wch := s.c.Watch(clientv3.WithRequireLeader(ctx), s.recordKey(resource), clientv3.WithRev(int64(fromRev)))
	latest := make(chan registry.RecordEvent, 1)
	out := make(chan registry.RecordEvent)
	go func() { // receive: keep only the newest event
		defer cancel()
		defer close(latest)
		for wr := range wch {
			if wr.Err() != nil || wr.Canceled {
				return
			}
			for _, ev := range wr.Events {
				if ev.Type != clientv3.EventTypePut {
					continue
				}
				rec, err := registry.DecodeRecord(ev.Kv.Value)
				if err != nil {
					return
				}
				offer(latest, registry.RecordEvent{Record: rec, ModRev: uint64(ev.Kv.ModRevision), Revision: uint64(wr.Header.Revision)})
			}
		}
	}()
	go func() { // deliver
		defer close(out)
		for ev := range latest {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// offer puts ev in the one-slot channel, replacing an undelivered event.
func offer(ch chan registry.RecordEvent, ev registry.RecordEvent) {
	for {
		select {
		case ch <- ev:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}
