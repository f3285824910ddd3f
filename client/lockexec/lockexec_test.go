//go:build unix

// Proves the wrapper's one safety duty with a real child process: when the
// registry stops answering (every call lost), ownership becomes
// OWNERSHIP_UNKNOWN and the child is stopped, reported as lost; and the
// negative control, the same run with the ownership watch turned off,
// leaves the child running long after ownership was lost.
package lockexec

import (
	"bytes"
	"context"
	"crypto/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/wire"
)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// run starts a lock whose registry goes silent once the child has said
// "started"; it returns the result, the lease and when the loss began.
func run(t *testing.T, ignore bool, until time.Duration) (Result, *client.Lease, time.Time) {
	t.Helper()
	key, err := grant.GenerateKey(grant.AlgEd25519, "lockexec-test", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(memstore.New(), registry.DefaultConfig(1), clock.System{}, key)
	if err != nil {
		t.Fatal(err)
	}
	var silent atomic.Bool
	net := &clienttest.Lossy{Inner: registry.Direct{Registry: reg, Owner: "worker-1"}, Fault: func(string, string) clienttest.Fault {
		if silent.Load() {
			return clienttest.DropRequest
		}
		return clienttest.Pass
	}}
	s := client.NewSession(net, client.Options{})
	out := &lockedBuf{}
	ctx, cancel := context.WithTimeout(context.Background(), until)
	defer cancel()
	var lost time.Time
	go func() { // the registry dies once the child runs
		for !bytes.Contains([]byte(out.String()), []byte("started")) {
			time.Sleep(10 * time.Millisecond)
		}
		lost = time.Now()
		silent.Store(true)
	}()
	res, _ := Run(ctx, Config{Session: s, Request: wire.AcquireRequest{Resource: "lx/one", OperationID: "op", OperationClass: "lock", TTLMs: 3000},
		Command: "sh", Args: []string{"-c", "echo started; exec sleep 30"}, Grace: time.Second, ReleaseTimeout: time.Second,
		Stdout: out, Stderr: out, Log: out, ignoreOwnership: ignore})
	l, _ := s.Lease("lx/one")
	return res, l, lost
}

func TestChildStoppedWhenOwnershipLost(t *testing.T) {
	start := time.Now()
	res, _, lost := run(t, false, 30*time.Second)
	if !res.Lost || res.ExitCode != 128+15 || res.LostState != client.StateUnknown {
		t.Fatalf("result %+v: want lost (OWNERSHIP_UNKNOWN) and the child's SIGTERM status 143", res)
	}
	t.Logf("child stopped %s after the registry went silent (TTL 3s); run %s", time.Since(lost).Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
}

func TestNegativeControlChildKeepsRunningWithoutTheWatch(t *testing.T) {
	res, _, lost := run(t, true, 5*time.Second)
	// Stopped only by the test's own deadline, long after ownership was
	// lost (a 3s lease, uncertain within about 2s of the silence).
	if res.Lost || time.Since(lost) < 4*time.Second || res.ExitCode != 128+15 {
		t.Fatalf("without the watch: %+v after %s; want the child to run until the test stopped it", res, time.Since(lost))
	}
}
