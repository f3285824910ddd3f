// This file proves what a restart of redis-server does to fencing, with a
// real server killed with SIGKILL and started again on the same port and
// data directory, for each persistence setting: A builds its write under
// fence 1, B writes under fence 2, Redis is killed and restarted, and A's
// write reaches the same gate. Where the restart kept the state, A is
// STALE_OWNER; where it lost it, the gate — which still remembers fence 2
// — answers FENCE_REGRESSION and pauses the resource with highestFence 2,
// on its warm path, on its cold path, and after an error made it drop its
// cached state. Never ACCEPTED. A restart from a data directory older than
// what the gate saw (a machine crash losing the last second of an
// appendfsync everysec file) is a regression too. In shadow mode the write
// goes through with the state restored; an operator action through the
// gate restores and pauses first.
package redisgate_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/redisgate"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/redistest"
)

// persistenceSettings are the configurations a restart is tried on, and
// whether a restart of the process keeps what Redis acknowledged.
// mayLose marks a setting where a killed process may or may not have
// handed its last acknowledged writes to the kernel: under appendfsync
// everysec Redis postpones its write() to the append-only file, for up to
// two seconds, while the previous second's fsync is still running, and
// answers the client meanwhile. Either outcome is then right (STALE_OWNER
// with the state kept, or FENCE_REGRESSION with it lost); ACCEPTED never is.
var persistenceSettings = []struct {
	name    string
	args    []string
	keeps   bool
	mayLose bool
}{
	{"appendfsync always", redistest.Durable, true, false},
	{"appendfsync everysec", redistest.AOFEverysec, true, true},
	{"appendfsync no", redistest.AOFNoFsync, true, false}, // written every event loop: the kernel holds it
	{"RDB snapshots only", redistest.RDBOnly, false, false},
	{"no persistence", redistest.Unpersisted, false, false},
}

// gatePaths are the ways the gate's write after the restart can go.
var gatePaths = []struct {
	name string
	cfg  redisgate.Config
	// dropCache sends a write while Redis is down, so that the gate
	// drops its cached state (the memory of the fence must survive).
	dropCache bool
}{
	{"warm", redisgate.Config{}, false},
	{"cold", redisgate.Config{CachedStatesMax: -1}, false},
	{"after an error", redisgate.Config{}, true},
}

func TestRestartNeverAcceptsStaleWrite(t *testing.T) {
	for _, p := range persistenceSettings {
		for _, path := range gatePaths {
			t.Run(p.name+"/"+path.name, func(t *testing.T) {
				srv := redistest.StartServer(t, p.args...)
				s := newRestartStory(t, srv, path.cfg)
				s.bWrites(t)
				srv.Kill(t)
				if path.dropCache {
					s.writeWhileDown(t)
				}
				srv.Restart(t)
				s.checkAfterRestart(t, p.keeps, p.mayLose)
			})
		}
	}
}

// TestRestartFromOlderData restarts Redis from a copy of its data taken
// before B's write: what a machine crash does to an append-only file
// whose last second was not yet on disk (appendfsync everysec or no).
// The state is there, older than the gate saw.
func TestRestartFromOlderData(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartServer(t, redistest.Durable...)
	s := newRestartStory(t, srv, redisgate.Config{})
	// A writes its first segment under fence 1 while it holds the lock.
	if _, err := s.apply(ctx, s.issA, s.writer("a", 1), 1); err != nil {
		t.Fatal(err)
	}
	before := srv.CopyData(t)
	s.bWrites(t)
	srv.Kill(t)
	srv.ReplaceData(t, before)
	srv.Restart(t)
	if st := s.stored(t); st.HighestFence != 1 {
		t.Fatalf("the restarted server holds highestFence %d, want the older 1", st.HighestFence)
	}
	// A's second segment: the next one after what the old data holds.
	value := s.value(t)
	_, err := s.apply(ctx, s.issA, s.writer("a", 1), 2)
	s.checkRegression(t, err, value)
}

// TestRestartInShadowMode: a shadow-mode resource whose state was lost
// gets it back (highestFence 2) with the alarm, and A's write goes
// through, as shadow mode lets every write through, answered with the
// outcome enforce mode would have given.
func TestRestartInShadowMode(t *testing.T) {
	srv := redistest.StartServer(t, redistest.Unpersisted...)
	s := newRestartStory(t, srv, redisgate.Config{DefaultMode: gate.ModeShadow})
	s.bWrites(t)
	srv.Kill(t)
	srv.Restart(t)
	r, err := s.apply(context.Background(), s.issA, s.writer("a", 1), 1)
	if err != nil || r.Outcome != gate.FenceRegression || r.Mode != gate.ModeShadow {
		t.Fatalf("A in shadow mode: %+v %v, want a shadow pass-through with outcome FENCE_REGRESSION", r, err)
	}
	if st := s.stored(t); st.HighestFence != 2 || st.Paused || st.Mode != gate.ModeShadow {
		t.Fatalf("stored state %+v: want highestFence 2, shadow, not paused", st)
	}
	for kind, n := range map[string]int{"alarm": 1, "shadow": 1} {
		if recs, err := s.g.Records(context.Background(), kind, s.r); err != nil || len(recs) != n {
			t.Fatalf("%s records %+v %v, want %d", kind, recs, err, n)
		}
	}
}

// TestResumeAfterRestart: an operator action through the gate that
// remembers fence 2 finds the state gone, restores and pauses it first,
// so a resume must state a floor above 2; after it, A stays stale and a
// new grant writes.
func TestResumeAfterRestart(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartServer(t, redistest.Unpersisted...)
	s := newRestartStory(t, srv, redisgate.Config{})
	s.bWrites(t)
	srv.Kill(t)
	srv.Restart(t)
	if err := s.g.Resume(ctx, s.r, 2, "ops", "floor 2"); !errors.Is(err, gate.ErrResumeRefused) {
		t.Fatalf("resume with floor 2 after the loss: %v, want refused (highestFence 2 restored)", err)
	}
	if st := s.stored(t); !st.Paused || st.HighestFence != 2 {
		t.Fatalf("stored state %+v: want paused with highestFence 2", st)
	}
	if err := s.g.Resume(ctx, s.r, 3, "ops", "registry floor raised to 3"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.apply(ctx, s.issA, s.writer("a", 1), 1); gate.OutcomeOf(err) != gate.StaleOwner {
		t.Fatalf("A after the resume: %v, want STALE_OWNER", err)
	}
	if _, err := s.apply(ctx, s.issB.Later(time.Second), s.writer("c", 4), 1); err != nil {
		t.Fatalf("C under fence 4 after the resume: %v", err)
	}
}

// restartStory is one resource on one server behind one gate: A's
// envelope built under fence 1 before B is granted fence 2.
type restartStory struct {
	srv        *redistest.Server
	c          *redis.Client
	g          *redisgate.Gate
	issA, issB *gatetest.Issuer // the registry signing A's grant, and B's 100 ms later
	r          string
}

// newRestartStory opens a gate on srv with cfg. The gate accepts the
// risk of a server that can lose acknowledged writes (AcceptFenceLoss):
// these tests are about what it does when the loss happens anyway.
func newRestartStory(t *testing.T, srv *redistest.Server, cfg redisgate.Config) *restartStory {
	// A client that gives up quickly while the server is down.
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: 1, DialTimeout: time.Second})
	t.Cleanup(func() { c.Close() })
	cfg.AcceptFenceLoss = true
	g, iss := newGate(t, c, cfg)
	return &restartStory{srv: srv, c: c, g: g, issA: iss, issB: iss.Later(100 * time.Millisecond), r: "redis/restart"}
}

func (s *restartStory) writer(who string, fence uint64) gatetest.Writer {
	return gatetest.Writer{Resource: s.r, Owner: "worker-" + who, Lease: "l-" + who, OperationID: "settle-" + who, Fence: fence}
}

func (s *restartStory) valueKey() string { return s.g.KeysOf(s.r).Tag + ":value" }

// apply sends w's segment seq (its grant and HELD proof signed by iss),
// writing w's owner as the value.
func (s *restartStory) apply(ctx context.Context, iss *gatetest.Issuer, w gatetest.Writer, seq uint64) (gate.Receipt, error) {
	m := iss.Mutation(w, seq, fmt.Sprintf("%s-%d", w.Owner, seq))
	return s.g.Apply(ctx, w.Owner, m, func(context.Context) ([]redisgate.Command, error) {
		return []redisgate.Command{{"SET", s.valueKey(), w.Owner}}, nil
	})
}

// bWrites: A's lease ended; B, granted fence 2 later, writes.
func (s *restartStory) bWrites(t *testing.T) {
	t.Helper()
	if _, err := s.apply(context.Background(), s.issB, s.writer("b", 2), 1); err != nil {
		t.Fatalf("B under fence 2: %v", err)
	}
}

// writeWhileDown sends B's next segment while Redis is down: it fails
// and the gate drops its cached state.
func (s *restartStory) writeWhileDown(t *testing.T) {
	t.Helper()
	if _, err := s.apply(context.Background(), s.issB, s.writer("b", 2), 2); err == nil {
		t.Fatal("a write with Redis down succeeded")
	}
}

// checkAfterRestart sends A's stale write through the gate and checks
// the answer and what Redis holds after it.
func (s *restartStory) checkAfterRestart(t *testing.T, kept, mayLose bool) {
	t.Helper()
	value := s.value(t)
	_, err := s.apply(context.Background(), s.issA, s.writer("a", 1), 1)
	if mayLose && gate.OutcomeOf(err) == gate.FenceRegression {
		t.Logf("the kill lost Redis's last acknowledged writes (appendfsync everysec postponed them)")
		kept = false
	}
	if kept {
		if gate.OutcomeOf(err) != gate.StaleOwner {
			t.Fatalf("the state survived the restart, yet A's stale write got %s (%v), want STALE_OWNER", gate.OutcomeOf(err), err)
		}
		if v := s.value(t); v != "worker-b" {
			t.Fatalf("value %q, want B's", v)
		}
		return
	}
	s.checkRegression(t, err, value)
}

// checkRegression checks a FENCE_REGRESSION that paused the resource,
// stored, with highestFence 2 kept and the value as it was before
// (value).
func (s *restartStory) checkRegression(t *testing.T, err error, value string) {
	t.Helper()
	if gate.OutcomeOf(err) != gate.FenceRegression {
		t.Fatalf("after the state went back A's stale write got %s (%v), want FENCE_REGRESSION", gate.OutcomeOf(err), err)
	}
	t.Logf("A's stale write: %v", err)
	var rej *gate.Rejection
	if !errors.As(err, &rej) || !rej.Recorded || rej.Alarm != gate.AlarmRegression {
		t.Fatalf("rejection %+v: want a recorded FENCE_REGRESSION alarm", rej)
	}
	st := s.stored(t)
	if !st.Paused || st.HighestFence != 2 || st.Mode != gate.ModeEnforce {
		t.Fatalf("stored state %+v: want paused, enforce, highestFence 2", st)
	}
	if v := s.value(t); v != value {
		t.Fatalf("value %q, was %q: A's stale write changed it", v, value)
	}
	alarms, err := s.g.Records(context.Background(), "alarm", s.r)
	if err != nil || len(alarms) != 1 || alarms[0].AlarmKind != string(gate.AlarmRegression) {
		t.Fatalf("alarms %+v %v: want one FENCE_REGRESSION", alarms, err)
	}
	// Paused: B's next write is refused too until an operator resumes.
	if _, err := s.apply(context.Background(), s.issB, s.writer("b", 2), 2); gate.OutcomeOf(err) != gate.ResourcePaused {
		t.Fatalf("B after the pause: %v, want RESOURCE_PAUSED", err)
	}
}

// value reads the business value ("" for none).
func (s *restartStory) value(t *testing.T) string {
	t.Helper()
	v, err := s.c.Get(context.Background(), s.valueKey()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return v
}

// stored reads the resource's state from Redis.
func (s *restartStory) stored(t *testing.T) gate.FenceState {
	t.Helper()
	st, err := s.g.State(context.Background(), s.r)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
