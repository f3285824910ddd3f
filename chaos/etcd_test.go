// Proves the etcd cluster's faults are real (FENCEGATE_CHAOS=1): cutting
// the leader from its peers through the peer proxies makes the other two
// elect a new one, and healing brings the old leader back as a follower.
package chaos

import (
	"context"
	"testing"
	"time"
)

func TestEtcdLeaderLoss(t *testing.T) {
	bins := etcdBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var procs Procs
	defer procs.KillAll()
	c, err := startEtcd(ctx, &procs, bins, t.TempDir(), 1)
	if c != nil {
		defer c.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	old, err := c.Leader(ctx)
	if err != nil || old == "" {
		t.Fatalf("leader: %q, %v", old, err)
	}
	c.Isolate(old, true)
	var others []string
	for _, n := range c.Names() {
		if n != old {
			others = append(others, n)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		a, errA := c.LeaderSeenBy(ctx, others[0])
		b, errB := c.LeaderSeenBy(ctx, others[1])
		if errA == nil && errB == nil && a == b && a != "" && a != old {
			t.Logf("leader %s cut off; %s and %s elected %s", old, others[0], others[1], a)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leader %s cut off for 15s: %s sees %q (%v), %s sees %q (%v)", old, others[0], a, errA, others[1], b, errB)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.Isolate(old, false)
	if err := c.waitHealthy(ctx); err != nil {
		t.Fatalf("after heal: %v", err)
	}
}
