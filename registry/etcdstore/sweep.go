package etcdstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// The sweep index: one key per item, <prefix>s/<instant>/<owner>#<request
// ID>, the instant as 16 hex digits (so key order is (instant, owner,
// request ID) order, '#' sorting below both alphabets), the resource its
// value. A scan is one range from the cursor to the key of beforeMs.

const sweepDir = "s/"

// sweepPrefix is the key of every item due at atMs, up to its owner.
func (s *Store) sweepPrefix(atMs int64) string {
	return string(s.appendSweepPrefix(nil, atMs))
}

// appendSweepPrefix appends sweepPrefix(atMs): the prefix, sweepDir,
// atMs (at least 0) as 16 lower-case hex digits, and a slash.
func (s *Store) appendSweepPrefix(b []byte, atMs int64) []byte {
	const digits = "0123456789abcdef"
	b = append(append(b, s.prefix...), sweepDir...)
	v := uint64(max(atMs, 0))
	for i := 60; i >= 0; i -= 4 {
		b = append(b, digits[v>>uint(i)&0xf])
	}
	return append(b, '/')
}

func (s *Store) sweepKey(it registry.SweepItem) string {
	return string(s.sweepKeyBytes(it))
}

func (s *Store) sweepKeyBytes(it registry.SweepItem) []byte {
	b := make([]byte, 0, len(s.prefix)+len(sweepDir)+17+len(it.Key.Owner)+1+len(it.Key.RequestID))
	return append(append(append(s.appendSweepPrefix(b, it.AtMs), it.Key.Owner...), '#'), it.Key.RequestID...)
}

// sweepOps are w's sweep index writes.
func (s *Store) sweepOps(w registry.Write, t *writeTxn) {
	for _, sw := range w.Sweeps {
		k := s.sweepKeyBytes(sw.Item)
		if sw.Delete {
			t.then = append(t.then, deleteOp(k))
			t.size += len(k)
			continue
		}
		t.put(k, []byte(sw.Item.Resource))
	}
}

// ScanSweep implements registry.Store: one range read, from the cursor to
// the items due at beforeMs.
func (s *Store) ScanSweep(ctx context.Context, after registry.SweepItem, beforeMs int64, limit int) ([]registry.SweepItem, error) {
	if limit <= 0 || beforeMs <= 0 {
		return nil, nil
	}
	from := s.sweepPrefix(after.AtMs)
	if after.Key != (lockstate.RequestKey{}) {
		from = s.sweepKey(after) + "\x00"
	}
	kvs, err := s.rangeKeys(ctx, from, s.sweepPrefix(beforeMs), limit)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: scan sweep index: %w", err)
	}
	out := make([]registry.SweepItem, 0, len(kvs))
	for _, kv := range kvs {
		it, ok := s.sweepItemOf(string(kv.Key))
		if !ok {
			return nil, fmt.Errorf("etcdstore: scan sweep index: %w: key %q", wire.ErrCorrupt, kv.Key)
		}
		it.Resource = string(kv.Value)
		out = append(out, it)
	}
	return out, nil
}

// sweepItemOf parses an item's key (its Resource left empty).
func (s *Store) sweepItemOf(key string) (registry.SweepItem, bool) {
	name, ok := strings.CutPrefix(key, s.prefix+sweepDir)
	if !ok || len(name) < 18 || name[16] != '/' {
		return registry.SweepItem{}, false
	}
	at, err := strconv.ParseInt(name[:16], 16, 64)
	rest := name[17:]
	i := strings.LastIndexByte(rest, '#')
	if err != nil || i <= 0 || i == len(rest)-1 {
		return registry.SweepItem{}, false
	}
	return registry.SweepItem{AtMs: at, Key: lockstate.RequestKey{Owner: rest[:i], RequestID: rest[i+1:]}}, true
}
