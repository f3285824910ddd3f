package redisgate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// What keeps fences. A fence lives in the state key; the state key lives
// as long as Redis keeps the write that stored it. Redis answers a write
// before it is on disk unless the append-only file is on and fsynced
// before the answer:
//
//   - appendonly no: a crash loses every write since the last RDB
//     snapshot; with save "" there is none, so everything (a clean
//     shutdown too).
//   - appendonly yes, appendfsync no: Redis writes the file before it
//     answers and the kernel flushes it when it likes (about 30 s on
//     Linux). A crash of the process loses nothing; a crash of the
//     machine (power, kernel) loses those seconds.
//   - appendonly yes, appendfsync everysec: as above, with the file
//     fsynced every second: a crash of the machine loses about the last
//     second. When an fsync takes longer, Redis postpones its writes (up
//     to two seconds) while it answers, and a crash of the process loses
//     them too.
//   - appendonly yes, appendfsync always: fsynced before the answer: a
//     write Redis acknowledged survives a crash of either.
//
// And maxmemory-policy allkeys-* lets Redis evict the gate's keys (which
// have no TTL) under memory pressure, when maxmemory is set.
//
// Only the last keeps every fence, so only it is accepted for enforce
// mode. A gate that stays up while its Redis loses writes notices it for
// the resources it remembers (wentback.go); a gate that starts after, or
// restarts with, a Redis that lost writes cannot know what was lost.

// ErrVolatilePersistence: the Redis server can lose writes it
// acknowledged, and with them fences; enforce mode is refused on it
// unless Config.AcceptFenceLoss.
var ErrVolatilePersistence = errors.New("redisgate: Redis can lose writes it acknowledged, and with them fences; enforce mode refused")

// Setting is one server setting CheckPersistence reads.
type Setting struct {
	Name  string // as CONFIG GET names it
	Value string // what the server answered
	Want  string // what keeps fences; "" when any value does
	// Why says what Value can lose; "" when it loses nothing.
	Why string
}

// PersistenceReport is what CheckPersistence read from one server.
type PersistenceReport struct {
	Addr     string // the server's address, as the client knows it
	Version  string // redis_version
	RunID    string // run_id: a new one at every start of the server
	Settings []Setting
	// Err is nil when the server keeps every write it acknowledged across
	// a restart and a crash; otherwise it wraps ErrVolatilePersistence
	// and names the settings, or is why they could not be read.
	Err error
}

// CheckPersistence reads the persistence settings of the server behind c
// (of each primary, for a *redis.ClusterClient) with CONFIG GET and INFO,
// and judges them. The error is the first report's Err that is not nil,
// or why a server could not be reached; a server that refuses CONFIG GET
// (a managed Redis may) fails the check: its settings cannot be known.
func CheckPersistence(ctx context.Context, c redis.UniversalClient) ([]PersistenceReport, error) {
	if cc, ok := c.(*redis.ClusterClient); ok {
		var reps []PersistenceReport
		var mu sync.Mutex
		err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			rep := checkServer(ctx, node, node.Options().Addr)
			mu.Lock()
			defer mu.Unlock()
			reps = append(reps, rep)
			return nil
		})
		slices.SortFunc(reps, func(a, b PersistenceReport) int { return strings.Compare(a.Addr, b.Addr) })
		return reps, errors.Join(err, firstErr(reps))
	}
	rep := checkServer(ctx, c, addrOf(c))
	return []PersistenceReport{rep}, rep.Err
}

func firstErr(reps []PersistenceReport) error {
	for _, r := range reps {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

func addrOf(c redis.UniversalClient) string {
	if cl, ok := c.(*redis.Client); ok {
		return cl.Options().Addr
	}
	return fmt.Sprintf("%T", c)
}

// persistenceSettings are the settings checkServer reads, in order.
var persistenceSettings = []string{"appendonly", "appendfsync", "save", "maxmemory", "maxmemory-policy"}

// checkServer reads and judges one server, in one round trip.
func checkServer(ctx context.Context, c redis.Cmdable, addr string) PersistenceReport {
	rep := PersistenceReport{Addr: addr}
	var info *redis.StringCmd
	gets := make([]*redis.MapStringStringCmd, len(persistenceSettings))
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		info = p.Info(ctx, "server")
		for i, name := range persistenceSettings {
			gets[i] = p.ConfigGet(ctx, name)
		}
		return nil
	})
	if err := info.Err(); err != nil {
		rep.Err = fmt.Errorf("redisgate: %s: INFO server: %w", addr, err)
		return rep
	}
	rep.Version, rep.RunID = infoField(info.Val(), "redis_version"), infoField(info.Val(), "run_id")
	cfg := map[string]string{}
	for i, name := range persistenceSettings {
		v, gerr := gets[i].Result()
		if gerr != nil {
			rep.Err = fmt.Errorf("%w: %s: CONFIG GET %s refused (%v): the persistence settings cannot be checked", ErrVolatilePersistence, addr, name, gerr)
			return rep
		}
		cfg[name] = v[name]
	}
	if err != nil {
		rep.Err = fmt.Errorf("redisgate: %s: %w", addr, err)
		return rep
	}
	rep.Settings = judgeSettings(cfg)
	if p := rep.problems(); p != "" {
		rep.Err = fmt.Errorf("%w: %s", ErrVolatilePersistence, p)
	}
	return rep
}

// problems names the settings of r that can lose acknowledged writes,
// with what they lose; "" if none does.
func (r PersistenceReport) problems() string {
	var bad []string
	for _, s := range r.Settings {
		if s.Why != "" {
			bad = append(bad, fmt.Sprintf("%s %s (want %s): %s", s.Name, quoteEmpty(s.Value), s.Want, s.Why))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return r.Addr + ": " + strings.Join(bad, "; ")
}

// judgeSettings says what each setting of cfg keeps (the rules above).
func judgeSettings(cfg map[string]string) []Setting {
	aof, fsync, save := cfg["appendonly"], cfg["appendfsync"], cfg["save"]
	out := []Setting{{Name: "appendonly", Value: aof, Want: "yes"}, {Name: "appendfsync", Value: fsync, Want: "always"},
		{Name: "save", Value: save}, {Name: "maxmemory", Value: cfg["maxmemory"]},
		{Name: "maxmemory-policy", Value: cfg["maxmemory-policy"], Want: "noeviction or volatile-*"}}
	switch {
	case aof != "yes" && save == "":
		out[0].Why = "no append-only file and no RDB snapshots: a restart loses every write"
	case aof != "yes":
		out[0].Why = fmt.Sprintf("no append-only file: a restart loses every write since the last RDB snapshot (save %q)", save)
	case fsync == "everysec":
		out[1].Why = "a crash of the machine loses about the last second of acknowledged writes (of the process too, up to two seconds, when the disk is slow)"
	case fsync != "always":
		out[1].Why = "the kernel writes the file to disk when it likes: a crash of the machine loses the last seconds of acknowledged writes"
	}
	if strings.HasPrefix(out[4].Value, "allkeys-") && out[3].Value != "0" {
		out[4].Why = "Redis may evict the gate's state keys under memory pressure"
	}
	return out
}

func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}
