package registry

import (
	"context"
	"fmt"
	"runtime"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/batch"
)

// Batch signing (Config.BatchGrantProofs). The store commits concurrent
// writes as one transaction (a group commit), and their grants reach the
// signing step together; the batch signer gives such a group one Ed25519
// signature over the Merkle root of its grants, each grant's proof its
// inclusion path (grant.SigningKey.SignBatch). It is internal/batch's
// queue, the mechanism of the group commit itself: a grant that finds the
// signer idle is signed at once, alone (a batch of one: no wait when
// idle); grants that arrive while batchSignInflightMax groups are being
// signed queue, and the next free slot signs them all, up to
// grant.BatchLeavesMax, under one signature. A batch orders and decides
// nothing: every grant was committed before it is signed, and the proof
// of each verifies alone.

// batchSignInflightMax is how many groups are signed at once before
// grants queue: one, so that under load every grant that arrives during a
// signature joins the next (a signature costs some 25 µs; a group's tree,
// one hash per grant more). Two cores' worth would halve the grouping for
// no gain: the tree and the signature together stay far below the
// store's round trip.
const batchSignInflightMax = 1

// batchSigner groups grants for signing.
type batchSigner struct {
	key *grant.SigningKey
	q   batch.Queue[*signCall]
}

// signCall is one grant waiting for its proof.
type signCall struct {
	m     grant.Message
	proof string
	err   error
	done  chan struct{}
}

func newBatchSigner(key *grant.SigningKey) (*batchSigner, error) {
	if key.Alg != grant.AlgEd25519 {
		return nil, fmt.Errorf("registry: BatchGrantProofs needs an ed25519 signing key, %s is %s", key.KeyID, key.Alg)
	}
	s := &batchSigner{key: key}
	s.q = batch.Queue[*signCall]{InflightMax: batchSignInflightMax, Group: groupUpTo(grant.BatchLeavesMax), Send: s.send}
	return s, nil
}

// groupUpTo admits at most n calls into one group.
func groupUpTo(n int) func() func(*signCall) bool {
	return func() func(*signCall) bool {
		taken := 0
		return func(*signCall) bool {
			taken++
			return taken <= n
		}
	}
}

// sign returns m's batch proof. Signing does no I/O and is never
// withdrawn: a queued grant waits at most for the group ahead of it.
func (s *batchSigner) sign(m grant.Message) (string, error) {
	c := &signCall{m: m, done: make(chan struct{})}
	if _, err := s.q.Do(context.Background(), c, c.done); err != nil {
		return "", err
	}
	return c.proof, c.err
}

// send signs one group and hands each grant its proof. It yields first:
// the grants of one group commit are answered by goroutines the store
// woke together, and on a machine with few cores they reach the signer
// one after another, so the first would sign alone and each next one
// alone behind it. Yielding once lets every goroutine runnable now reach
// the queue before this group's signature; the queue then goes as the
// next group, one signature for the rest of the group commit (at 64
// resources on 2 cores: 0.9 signatures a grant without the yield, under
// 0.2 with it; docs/performance.md). Idle, the yield returns at once.
func (s *batchSigner) send(group []*signCall) {
	runtime.Gosched()
	ms := make([]grant.Message, len(group))
	for i, c := range group {
		ms[i] = c.m
	}
	proofs, err := s.key.SignBatch(ms)
	if err != nil {
		// One invalid grant must not cost the others their proofs: sign
		// each alone, so only its own error comes back.
		for _, c := range group {
			c.proof, c.err = s.key.Sign(c.m)
			close(c.done)
		}
		return
	}
	for i, c := range group {
		c.proof = proofs[i]
		close(c.done)
	}
}
