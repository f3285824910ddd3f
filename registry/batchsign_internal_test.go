// Proves the batch signer groups what arrives while a group is being
// signed: the first grant is signed alone at once, the ones queued behind
// it share the next signature, and every proof verifies alone.
package registry

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/grant"
)

func TestBatchSignerGroupsQueuedGrants(t *testing.T) {
	k, err := grant.GenerateKey(grant.AlgEd25519, "reg-1", bytes.NewReader(bytes.Repeat([]byte{7}, 64)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := grant.NewBundle(grant.BundleFile{Version: 1, Keys: []grant.BundleKey{{
		KeyID: k.KeyID, Alg: k.Alg, PublicKey: base64.RawURLEncoding.EncodeToString(k.PublicKey()), MinEpoch: 1, State: grant.KeyActive,
	}}}, "")
	if err != nil {
		t.Fatal(err)
	}
	v := grant.NewVerifier(b, -1)
	s, err := newBatchSigner(k)
	if err != nil {
		t.Fatal(err)
	}
	const n = 9
	send, entered, hold := s.q.Send, make(chan int, n), make(chan struct{})
	s.q.Send = func(g []*signCall) { // the first group waits until all others queued
		entered <- len(g)
		<-hold
		send(g)
	}
	gs, proofs := make([]*grant.Grant, n), make([]string, n)
	for i := range gs {
		gs[i] = testBatchGrant(i)
	}
	var wg sync.WaitGroup
	sign := func(i int) {
		defer wg.Done()
		var err error
		if proofs[i], err = s.sign(gs[i]); err != nil {
			t.Error(err)
		}
	}
	wg.Add(1)
	go sign(0)
	if got := <-entered; got != 1 {
		t.Fatalf("the first grant was signed in a group of %d", got)
	}
	for i := 1; i < n; i++ {
		wg.Add(1)
		go sign(i)
	}
	for s.q.Queued() != n-1 {
		time.Sleep(time.Millisecond)
	}
	close(hold)
	wg.Wait()
	if got := <-entered; got != n-1 {
		t.Fatalf("the queued grants were signed in a group of %d, want %d", got, n-1)
	}
	sigs := map[string][]int{}
	for i, p := range proofs {
		bp, err := grant.ParseBatchProof(p)
		if err != nil {
			t.Fatalf("grant %d: %v", i, err)
		}
		if err := v.Verify(gs[i], p); err != nil {
			t.Fatalf("grant %d: %v", i, err)
		}
		sigs[string(bp.Signature)] = append(sigs[string(bp.Signature)], i)
	}
	if len(sigs) != 2 {
		t.Fatalf("%d signatures for %d grants, want 2 (one alone, one for the queued %d): %v", len(sigs), n, n-1, sigs)
	}
}

func testBatchGrant(i int) *grant.Grant {
	at := time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)
	return &grant.Grant{
		Resource: fmt.Sprintf("batch/%d", i), Owner: "worker-a", RequestID: "r", Lease: "l",
		OperationRoot: grant.OperationRoot(fmt.Sprintf("batch/%d", i), "op"), OperationClass: "settle",
		FenceToken: 1, BackendRevision: 1, PolicyGeneration: 1, IssuerEpoch: 7, TTLMs: 10000,
		IssuedAt: at, ExpiresAt: at.Add(10 * time.Second), HeldUntil: at.Add(2 * time.Second),
	}
}
