// This file proves what is particular to Redis: without WATCH (and with
// no cache, so that every write takes that path) the concurrent-writers
// case fails (the negative control of the optimistic transaction), a
// business command failing inside EXEC or the script is reported as
// partial, and ReplicasMin waits for a real replica or says it could not,
// on the cold path and on the warm one.
package redisgate_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/redisgate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
	"github.com/fencegate/fencegate/testkit/redistest"
)

func TestWithoutWatchConcurrentWritersFail(t *testing.T) {
	mutant := func(t testing.TB, cfg conformance.Config) conformance.Harness {
		h := newHarness(t, cfg).(*harness)
		redisgate.WithoutWatch(h.g)
		return h
	}
	why := conformance.Fails(t, mutant, "ConcurrentWriters")
	if why == "" {
		t.Fatal("without WATCH the concurrent writers still passed: the case cannot see a lost race")
	}
	t.Logf("without WATCH: %s", why)
}

// newGate opens a gate on c with its own prefix, logging to t.
func newGate(t *testing.T, c redis.UniversalClient, cfg redisgate.Config) (*redisgate.Gate, *gatetest.Issuer) {
	t.Helper()
	iss := gatetest.NewIssuer("redis")
	cfg.Client, cfg.Policy, cfg.Prefix = c, gate.Policy{Verifier: iss.Verifier}, redistest.Prefix()
	cfg.Clock = fakeclock.New(iss.Now.Add(time.Second))
	if cfg.Logger == nil {
		cfg.Logger = newLog(t).logger()
	}
	g, err := redisgate.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g, iss
}

// logLines is a log that goes to t and keeps its lines for the test.
type logLines struct {
	t     testing.TB
	mu    sync.Mutex
	lines []string
}

func newLog(t testing.TB) *logLines { return &logLines{t: t} }

func (l *logLines) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

func (l *logLines) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	l.t.Log(line)
	return len(p), nil
}

// has returns the first line containing every one of words, "" if none.
func (l *logLines) has(words ...string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(line, w) }) {
			return line
		}
	}
	return ""
}

func writer(r string, fence uint64) gatetest.Writer {
	return gatetest.Writer{Resource: r, Owner: "worker-a", Lease: "l", OperationID: "op", Fence: fence}
}

func TestBusinessCommandFailingInsideExec(t *testing.T) {
	ctx := context.Background()
	c := redistest.Client(t)
	g, iss := newGate(t, c, redisgate.Config{})
	const r = "redis/partial"
	bad := g.KeysOf(r).Tag + ":a-string"
	if err := c.Set(ctx, bad, "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	fn := func(context.Context) ([]redisgate.Command, error) {
		return []redisgate.Command{{"RPUSH", bad, "y"}}, nil // WRONGTYPE at run time
	}
	// Segment 1 is a cold write (MULTI/EXEC), segment 2 a warm one (the
	// compare-and-set script): neither rolls back.
	for seq := uint64(1); seq <= 2; seq++ {
		_, err := g.Apply(ctx, "worker-a", iss.Mutation(writer(r, 1), seq, "p"), fn)
		if !errors.Is(err, redisgate.ErrBusinessPartial) {
			t.Fatalf("segment %d: got %v", seq, err)
		}
		// Redis ran the rest: the receipt and the state are there, and say so.
		if st, _ := g.State(ctx, r); st.HighestFence != 1 || st.LastSegmentSeq != seq {
			t.Fatalf("segment %d: state %+v", seq, st)
		}
	}
}

func TestReplicasMin(t *testing.T) {
	ctx := context.Background()
	primary := redistest.StartServer(t, slices.Concat(redistest.Durable, []string{"--repl-diskless-sync-delay", "0"})...).Addr() // sync the replica at once
	pc := redis.NewClient(&redis.Options{Addr: primary})
	defer pc.Close()
	g, iss := newGate(t, pc, redisgate.Config{ReplicasMin: 1, ReplicasTimeout: 200 * time.Millisecond})
	fn := func(context.Context) ([]redisgate.Command, error) { return nil, nil }
	for seq := uint64(1); seq <= 2; seq++ { // cold, then warm
		if _, err := g.Apply(ctx, "worker-a", iss.Mutation(writer("redis/wait", 1), seq, "p"), fn); !errors.Is(err, redisgate.ErrReplicationUnconfirmed) {
			t.Fatalf("no replica, segment %d: got %v", seq, err)
		}
	}
	host, port, _ := net.SplitHostPort(primary)
	// The replica keeps nothing on disk: with an append-only file it rewrites
	// it after the first sync, which delays its acknowledgements by seconds.
	replica := redistest.StartServer(t, slices.Concat(redistest.Unpersisted, []string{"--replicaof", host, port})...).Addr()
	rc := redis.NewClient(&redis.Options{Addr: replica})
	defer rc.Close()
	waitSynced(t, rc)
	g2, _ := newGate(t, pc, redisgate.Config{ReplicasMin: 1, ReplicasTimeout: 5 * time.Second})
	for seq := uint64(1); seq <= 2; seq++ {
		if _, err := g2.Apply(ctx, "worker-a", iss.Mutation(writer("redis/wait", 1), seq, "p"), fn); err != nil {
			t.Fatalf("with a replica, segment %d: %v", seq, err)
		}
	}
	// The replica holds the state the primary acknowledged.
	if n, err := rc.Exists(ctx, g2.KeysOf("redis/wait").State).Result(); err != nil || n != 1 {
		t.Fatalf("replica: %d %v", n, err)
	}
	if b, err := rc.Get(ctx, g2.KeysOf("redis/wait").State).Result(); err != nil || !strings.Contains(b, `"lastSegmentSeq":2`) {
		t.Fatalf("replica state %s %v", b, err)
	}
}

// waitSynced waits until the replica reports its link to the primary up.
func waitSynced(t *testing.T, rc *redis.Client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		info, err := rc.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("replica never synced")
}
