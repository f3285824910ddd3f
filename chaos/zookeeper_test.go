// Proves the ZooKeeper ensemble's faults are real (FENCEGATE_CHAOS=1):
// freezing the leader makes the other two elect a new one and thawing it
// brings it back as a follower; cutting a follower's quorum link to its
// leader through the peer proxies takes it out of service until healed.
package chaos

import (
	"context"
	"testing"
	"time"
)

func TestZooKeeperLeaderLossAndCut(t *testing.T) {
	zooKeeperAvailable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var procs Procs
	defer procs.KillAll()
	z, err := startZooKeeper(ctx, &procs, t.TempDir(), 1)
	if z != nil {
		defer z.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	old, err := z.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	z.LoseLeader(old, true)
	now := eventually(t, 15*time.Second, func() (string, bool) {
		n, err := z.Leader(ctx)
		return n, err == nil && n != old
	})
	t.Logf("leader %s frozen; %s elected", old, now)
	z.LoseLeader(old, false)
	if err := z.waitHealthy(ctx); err != nil {
		t.Fatalf("after thawing %s: %v", old, err)
	}
	if n, err := z.Leader(ctx); err != nil || n != now {
		t.Fatalf("after thawing %s: leader %q (%v), want %s", old, n, err, now)
	}
	follower := old
	z.Cut(follower, now, true)
	eventually(t, 15*time.Second, func() (string, bool) {
		_, err := z.ens.Member(zkID(follower)).Mode()
		return "", err != nil
	})
	t.Logf("%s cut from leader %s: not serving", follower, now)
	z.Cut(follower, now, false)
	if err := z.waitHealthy(ctx); err != nil {
		t.Fatalf("after healing the cut: %v", err)
	}
}

// eventually polls cond every 200 ms until it holds or d has passed.
func eventually(t *testing.T, d time.Duration, cond func() (string, bool)) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if v, ok := cond(); ok {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s", d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
