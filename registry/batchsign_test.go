// Proves Config.BatchGrantProofs end to end on the registry: concurrent
// acquires on 64 resources each get a batch proof that verifies alone, a
// retry answers the same proof, a renewal still verifies; an HMAC
// signing key refuses the setting at New.
package registry_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/wire"
)

func TestBatchGrantProofs(t *testing.T) {
	e := newEnv(t, func(c *registry.Config) { c.BatchGrantProofs = true })
	const n = 64
	issued := make([]wire.Issued, n)
	var wg sync.WaitGroup
	for i := range issued {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if issued[i], err = e.reg.Acquire(e.ctx, "worker-a", req(fmt.Sprintf("batch/%d", i), fmt.Sprintf("r-%d", i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	sigs := map[string]int{}
	for i, is := range issued {
		if !strings.HasPrefix(is.GrantProof, "batch:") {
			t.Fatalf("acquire %d: proof %q is not a batch proof", i, is.GrantProof)
		}
		e.checkProofs(is)
		bp, _ := grant.ParseBatchProof(is.GrantProof)
		sigs[string(bp.Signature)]++
	}
	t.Logf("%d grants, %d signatures", n, len(sigs)) // how many grouped is the scheduler's; the signer test pins the grouping
	again, err := e.reg.Acquire(e.ctx, "worker-a", req("batch/3", "r-3"))
	if err != nil || again.GrantProof != issued[3].GrantProof || !bytes.Equal(again.Grant.Encode(), issued[3].Grant.Encode()) {
		t.Fatalf("retry: %v, proof %q, first %q", err, again.GrantProof, issued[3].GrantProof)
	}
	rn, err := e.reg.Renew(e.ctx, "worker-a", "batch/3", issued[3].Grant.Lease)
	if err != nil {
		t.Fatal(err)
	}
	e.checkProofs(rn)
}

func TestBatchGrantProofsNeedEd25519(t *testing.T) {
	k, err := grant.GenerateKey(grant.AlgHMACSHA256, "mac-1", bytes.NewReader(bytes.Repeat([]byte{7}, 64)))
	if err != nil {
		t.Fatal(err)
	}
	cfg := registry.DefaultConfig(epoch)
	cfg.BatchGrantProofs = true
	_, err = registry.New(memstore.New(), cfg, fakeclock.New(time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)), k)
	if err == nil || !strings.Contains(err.Error(), "ed25519") {
		t.Fatalf("an HMAC key with BatchGrantProofs: %v", err)
	}
}
