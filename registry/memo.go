package registry

import (
	"fmt"
	"sync"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// The grant memo keeps, per lease this Registry issued or answered for,
// the grant's backend revision and its proof, so a renewal neither reads
// the request entry again nor signs the same grant twice. Both are facts
// that never change while the lease lives: the backend revision is the
// create revision of the lease's request entry, which is written in the
// granting transaction and never deleted while HELD; a proof is a
// deterministic function of the grant's digest and this Registry's key
// (Ed25519 and HMAC-SHA256 alike), so a remembered proof is byte for byte
// the one signing would make — except a batch proof
// (Config.BatchGrantProofs), which depends on the grants signed with it:
// a remembered one is one that signing made, and verifies as any other
// would. A memo entry is used only when the stored
// grant body is exactly the one remembered; a miss costs the read or the
// signature, never a different answer.

// grantMemosMax bounds the memo; when full a shard is cleared (a miss
// only costs a read and a signature).
const grantMemosMax = 16_384

// grantMemoShards is how many locks the memo is split under, by resource:
// every acquire looks a grant up and remembers it, and at 64 resources
// one lock had the callers of a group commit queue behind each other.
const grantMemoShards = 16

type grantMemo struct {
	body       lockstate.GrantBody
	backendRev uint64
	digest     grant.Digest
	proof      string
}

// grantMemoKey names a memo entry: the lease on the resource.
type grantMemoKey struct{ resource, lease string }

type grantMemos struct {
	shards [grantMemoShards]grantMemoShard
}

type grantMemoShard struct {
	mu sync.Mutex
	m  map[grantMemoKey]grantMemo
}

// shard is the part of the memo that holds resource's grants.
func (g *grantMemos) shard(resource string) *grantMemoShard {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(resource); i++ {
		h = (h ^ uint32(resource[i])) * 16777619
	}
	return &g.shards[h%grantMemoShards]
}

// backendRev returns the remembered backend revision of body's grant.
func (g *grantMemos) backendRev(body lockstate.GrantBody) (uint64, bool) {
	sh := g.shard(body.Resource)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.m[grantMemoKey{body.Resource, body.Lease}]
	if !ok || e.body != body {
		return 0, false
	}
	return e.backendRev, true
}

// proof returns the remembered proof of the grant with digest d.
func (g *grantMemos) proof(body lockstate.GrantBody, d grant.Digest) (string, bool) {
	sh := g.shard(body.Resource)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.m[grantMemoKey{body.Resource, body.Lease}]
	if !ok || e.body != body || e.digest != d || e.proof == "" {
		return "", false
	}
	return e.proof, true
}

// remember records a grant as issued: its body, backend revision, digest
// and proof.
func (g *grantMemos) remember(body lockstate.GrantBody, backendRev uint64, d grant.Digest, proof string) {
	sh := g.shard(body.Resource)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	k := grantMemoKey{body.Resource, body.Lease}
	if _, ok := sh.m[k]; !ok && len(sh.m) >= grantMemosMax/grantMemoShards {
		clear(sh.m)
	}
	if sh.m == nil {
		sh.m = make(map[grantMemoKey]grantMemo)
	}
	sh.m[k] = grantMemo{body: body, backendRev: backendRev, digest: d, proof: proof}
}

// signGrant signs the grant unless its proof is remembered, and
// remembers it: a fresh held-form grant's one signature, or its share of
// a batch's (Config.BatchGrantProofs).
func (r *Registry) signGrant(body lockstate.GrantBody, g *grant.Grant) (string, error) {
	d := g.Digest()
	if gp, ok := r.memo.proof(body, d); ok {
		return gp, nil
	}
	sign := r.signer.Sign
	if r.batch != nil {
		sign = r.batch.sign
	}
	gp, err := sign(g)
	if err != nil {
		return "", fmt.Errorf("registry: sign grant: %w", err)
	}
	r.memo.remember(body, g.BackendRevision, d, gp)
	return gp, nil
}

// signPair signs the grant (unless its proof is remembered) and the status,
// the two on separate goroutines when both are needed: they are the bulk
// of an acquire's CPU outside the store.
func (r *Registry) signPair(body lockstate.GrantBody, g *grant.Grant, st *grant.Status) (string, string, error) {
	d := g.Digest()
	if gp, ok := r.memo.proof(body, d); ok {
		sp, err := r.signer.Sign(st)
		if err != nil {
			return "", "", fmt.Errorf("registry: sign status: %w", err)
		}
		return gp, sp, nil
	}
	var (
		sp   string
		serr error
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		sp, serr = r.signer.Sign(st)
	}()
	gp, gerr := r.signer.Sign(g)
	wg.Wait()
	if gerr != nil {
		return "", "", fmt.Errorf("registry: sign grant: %w", gerr)
	}
	if serr != nil {
		return "", "", fmt.Errorf("registry: sign status: %w", serr)
	}
	r.memo.remember(body, g.BackendRevision, d, gp)
	return gp, sp, nil
}
