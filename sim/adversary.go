package sim

import (
	"crypto/sha256"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// attackKind is one adversarial envelope.
type attackKind int

const (
	attackHugeFence     attackKind = iota // a grant with a forged huge fence, signed by a key the bundle never listed
	attackTampered                        // a genuine grant with its fence changed, original proof kept
	attackCrossResource                   // a genuine envelope replayed against another resource
	attackRevokedEpoch                    // a grant signed under a revoked issuer epoch (with that epoch's real key)
	attackUnknownKey                      // grant and status signed by an unknown key
	attackRetiredKey                      // grant and status signed by a retired key
	attackOtherStatus                     // a genuine grant with another grant's genuine status proof
	attackExpiredStatus                   // a genuine grant and status, sent after the status expired
	attackBatchSplice                     // a grant with its fence changed, claimed to sit beside the genuine one in the genuine batch signature's tree
	attackCount
)

var attackNames = [attackCount]string{
	"huge-fence", "tampered-grant", "cross-resource", "revoked-epoch",
	"unknown-key", "retired-key", "other-status", "expired-status",
	"batch-splice",
}

func (a attackKind) String() string { return attackNames[a] }

// hugeFence is a fence no registry would reach, still a valid BIGINT.
const hugeFence = uint64(1) << 62

// adversary taps the network between workers and the gate and injects
// envelopes crafted from what it saw. It sends as the grant's owner (the
// worst case: it stole the owner's transport identity), so the identity
// check alone cannot save the gate.
type adversary struct {
	w    *world
	seen []*gate.Mutation // genuine envelopes, oldest first, bounded
}

const adversarySeenMax = 16

func newAdversary(w *world) *adversary { return &adversary{w: w} }

func (a *adversary) capture(m *gate.Mutation) {
	if !a.w.on[FaultAdversary] {
		return
	}
	if len(a.seen) == adversarySeenMax {
		a.seen = append(a.seen[:0], a.seen[1:]...)
	}
	a.seen = append(a.seen, m)
}

// attack injects one envelope, or tries again later if nothing was seen.
func (a *adversary) attack() {
	w := a.w
	if len(a.seen) == 0 {
		if w.now < giveUpMs {
			w.after(1000, a.attack)
		}
		return
	}
	kind := attackKind(w.rng.pick(int(attackCount)))
	base := a.seen[w.rng.pick(len(a.seen))]
	g, err := grant.ParseGrant(base.Grant)
	if err != nil {
		panic("sim: adversary: captured grant does not parse: " + err.Error())
	}
	m := *base
	m.SegmentSeq = base.SegmentSeq + 1
	m.PayloadDigest = payloadDigest("adversary", m.SegmentSeq, 9)
	target := w.res
	switch kind {
	case attackHugeFence:
		g.FenceToken = hugeFence
		a.resign(&m, g, w.keys.evil, true)
		m.SegmentSeq = 1
	case attackTampered:
		g.FenceToken += 1000
		m.Grant, m.FenceToken, m.SegmentSeq = g.Encode(), g.FenceToken, 1
	case attackBatchSplice:
		a.splice(&m, g, base)
	case attackCrossResource:
		m.Resource, target = w.nbr.name, w.nbr
		m.SegmentSeq = 1
	case attackRevokedEpoch:
		g.IssuerEpoch, g.FenceToken = epochRevoked, hugeFence
		a.resign(&m, g, w.keys.old, true)
		m.SegmentSeq = 1
	case attackUnknownKey, attackRetiredKey:
		key := w.keys.evil
		if kind == attackRetiredKey {
			key = w.keys.retired
		}
		g.FenceToken++
		a.resign(&m, g, key, true)
		m.SegmentSeq = 1
	case attackOtherStatus:
		other := a.otherGrant(base)
		if other == nil {
			kind = attackExpiredStatus
			break
		}
		m.Status, m.StatusProof = other.Status, other.StatusProof
	}
	if kind == attackExpiredStatus && !a.expired(&m) {
		return
	}
	w.tracef("adversary: %s on %s fence %d segment %d", kind, target.name, m.FenceToken, m.SegmentSeq)
	w.after(w.delayMs(), func() { target.apply(&m, g.Owner, origin{attack: kind}) })
}

// splice forges a batch proof from a genuine one: g (its fence changed)
// as leaf 0 of a tree one larger than the genuine proof's, the genuine
// grant's leaf as its sibling, under the genuine signature; the status is
// dropped, so the forged grant's own held statement is its evidence. A
// single ("sig:") proof is kept as it is (a tampered grant, then).
func (a *adversary) splice(m *gate.Mutation, g *grant.Grant, base *gate.Mutation) {
	g.FenceToken += 1000
	m.Grant, m.FenceToken, m.SegmentSeq = g.Encode(), g.FenceToken, 1
	bp, err := grant.ParseBatchProof(base.GrantProof)
	if err != nil || bp.Size >= grant.BatchLeavesMax {
		return
	}
	// The genuine leaf as sibling, then the genuine path, cut or padded
	// to the shape of leaf 0 in the larger tree: well formed, so only
	// the signature can refuse it.
	genuine := grant.BatchLeaf(grant.SchemaGrant, grant.Digest(sha256.Sum256(base.Grant)))
	size := bp.Size + 1
	path := append([]grant.Digest{genuine}, bp.Path...)
	for len(path) < grant.BatchPathLen(0, size) {
		path = append(path, genuine)
	}
	forged := grant.BatchProof{KeyID: bp.KeyID, Index: 0, Size: size, Signature: bp.Signature, Path: path[:grant.BatchPathLen(0, size)]}
	m.GrantProof = forged.String()
	m.Status, m.StatusProof = nil, ""
}

// resign replaces the grant (and, with status, a HELD status proof) of m
// with ones signed by key: what an attacker holding key can produce.
func (a *adversary) resign(m *gate.Mutation, g *grant.Grant, key *grant.SigningKey, status bool) {
	p, err := key.Sign(g)
	if err != nil {
		panic("sim: adversary: sign: " + err.Error())
	}
	m.Grant, m.GrantProof, m.FenceToken = g.Encode(), p, g.FenceToken
	if !status {
		return
	}
	now := a.w.regClock.at(a.w.now)
	st := &grant.Status{Grant: g.Digest(), State: grant.StateHeld, BackendRevision: g.BackendRevision, IssuerEpoch: g.IssuerEpoch,
		IssuedAt: now, ValidUntil: now.Add(2 * a.w.cfg.skewBound())}
	sp, err := key.Sign(st)
	if err != nil {
		panic("sim: adversary: sign status: " + err.Error())
	}
	m.Status, m.StatusProof = st.Encode(), sp
}

// otherGrant returns a captured envelope under a different grant.
func (a *adversary) otherGrant(m *gate.Mutation) *gate.Mutation {
	for i := len(a.seen) - 1; i >= 0; i-- {
		if o := a.seen[i]; o.Lease != m.Lease && len(o.Status) > 0 {
			return o
		}
	}
	return nil
}

// expired reports whether m's status proof has expired by the registry's
// clock with a second to spare; an attack on a live proof would just be
// the owner writing, so it is only sent once the proof is dead.
func (a *adversary) expired(m *gate.Mutation) bool {
	ev, ok := evidenceOf(m) // a status proof, or the grant's own held statement
	if !ok {
		return false
	}
	return ev.ValidUntil.UnixMilli()+1000 < a.w.regClock.atMs(a.w.now)
}
