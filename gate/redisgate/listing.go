package redisgate

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/gate/internal/stored"
)

// This file is the gate's bounded listings, for a reporter
// (gate/report/redisreport): the resource names a few SCAN calls at a
// time, and a resource's last records of one kind in one round trip,
// never reading the rest (Records reads them all).

// Bounds of ResourceNames.
const (
	// ScanStepsMax bounds the SCAN calls of one ResourceNames, 8.
	ScanStepsMax = 8
	// ScanCount is each SCAN call's COUNT, 256 keys looked at.
	ScanCount = 256
)

// ResourceNames returns the names of resources with a stored state that
// at most ScanStepsMax SCAN calls (MATCH on the state keys, COUNT
// ScanCount) find from cursor ("" from the first), stopping at the call
// that finds limit or more, and the cursor to go on from ("" once the
// walk is complete). SCAN's guarantees are the walk's: a resource stored
// from its start to its end is returned at least once, maybe twice. On a
// Redis Cluster it walks the one node the client sends it to.
func (g *Gate) ResourceNames(ctx context.Context, cursor string, limit int) (names []string, next string, err error) {
	var at uint64
	if cursor != "" {
		if at, err = strconv.ParseUint(cursor, 10, 64); err != nil {
			return nil, "", fmt.Errorf("redisgate: cursor %q: %w", cursor, err)
		}
	}
	match := globEscape(g.prefix) + "{*}:state"
	for step := 0; step < ScanStepsMax && len(names) < max(limit, 1); step++ {
		var keys []string
		if keys, at, err = g.c.Scan(ctx, at, match, ScanCount).Result(); err != nil {
			return nil, "", fmt.Errorf("redisgate: scan: %w", err)
		}
		for _, k := range keys {
			name := strings.TrimSuffix(strings.TrimPrefix(k, g.prefix+"{"), "}:state")
			if checkResource(name) == nil && g.KeysOf(name).State == k {
				names = append(names, name)
			}
		}
		if at == 0 {
			return names, "", nil
		}
	}
	return names, strconv.FormatUint(at, 10), nil
}

// globEscape quotes the characters MATCH treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// LastRecords returns resource's last n records of kind ("alarm",
// "quarantine", "shadow" or "action"), oldest first, and how many it has,
// from one MULTI of LLEN and LRANGE -n -1.
func (g *Gate) LastRecords(ctx context.Context, kind, resource string, n int) ([]Record, int, error) {
	if err := checkResource(resource); err != nil {
		return nil, 0, err
	}
	switch kind {
	case stored.RecordAlarm, stored.RecordQuarantine, stored.RecordShadow, stored.RecordAction:
	default:
		return nil, 0, fmt.Errorf("redisgate: unknown record kind %q", kind)
	}
	key := g.KeysOf(resource).list(kind)
	var count *redis.IntCmd
	var last *redis.StringSliceCmd
	if _, err := g.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		count = p.LLen(ctx, key)
		last = p.LRange(ctx, key, -int64(max(n, 1)), -1)
		return nil
	}); err != nil {
		return nil, 0, fmt.Errorf("redisgate: records: %w", err)
	}
	vals := last.Val()
	if n <= 0 {
		vals = nil
	}
	out := make([]Record, 0, len(vals))
	for _, v := range vals {
		var r Record
		if err := stored.Decode([]byte(v), &r); err != nil {
			return nil, 0, err
		}
		out = append(out, r)
	}
	return out, int(count.Val()), nil
}
