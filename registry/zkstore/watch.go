package zkstore

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry"
)

// Watch implements registry.Store with ZooKeeper's one-shot watches,
// re-armed after each event by the read that reports the record: a get
// with a data watch (an exists watch while the record is missing). Each
// read reports the record when its mzxid is at least fromRev and above
// the last one reported, so events never go backwards; a slow reader sees
// only the latest (coalesced). The channel closes when ctx ends or the
// watch fails: a lost connection fails the read in flight, a lost session
// ends every watch (zk.EventNotWatching). The caller then falls back to
// Read. A watch armed when ctx ends stays registered in the client until
// the record next changes or the session ends (the client cannot remove
// one).
func (s *Store) Watch(ctx context.Context, resource string, fromRev uint64) (<-chan registry.RecordEvent, error) {
	ctx, cancel := context.WithCancel(ctx)
	p := s.recordPath(resource)
	latest := make(chan registry.RecordEvent, 1)
	out := make(chan registry.RecordEvent)
	go func() { // receive: read, report if newer, wait for the next event
		defer cancel()
		defer close(latest)
		var last uint64
		for {
			n, fired, err := s.getWatch(ctx, p)
			if err != nil {
				return
			}
			if rev := n.modRev(); rev != 0 && rev >= fromRev && rev > last {
				rec, err := registry.DecodeRecord(n.data)
				if err != nil {
					return
				}
				last = rev
				offer(latest, registry.RecordEvent{Record: rec, ModRev: rev, Revision: rev})
			}
			select {
			case ev := <-fired:
				if ev.Type == zk.EventNotWatching || ev.Err != nil {
					return
				}
			case <-ctx.Done():
				return
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

// getWatch reads p and arms a watch on it: a data watch when it exists,
// an exists watch when it does not.
func (s *Store) getWatch(ctx context.Context, p string) (node, <-chan zk.Event, error) {
	type armed struct {
		n     node
		fired <-chan zk.Event
	}
	for {
		a, err := call(ctx, func() (armed, error) {
			data, st, ch, err := s.c.GetW(p)
			if err != nil {
				return armed{}, err
			}
			return armed{node{ok: true, data: data, stat: *st}, ch}, nil
		})
		if !errors.Is(err, zk.ErrNoNode) {
			return a.n, a.fired, err
		}
		a, err = call(ctx, func() (armed, error) {
			exists, _, ch, err := s.c.ExistsW(p)
			return armed{n: node{ok: exists}, fired: ch}, err
		})
		if err != nil || !a.n.ok {
			return node{}, a.fired, err
		}
		// Created in between: read it with a data watch.
	}
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
