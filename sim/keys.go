package sim

import (
	"bytes"
	"crypto/sha256"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// Issuer epochs of the simulated deployment: the registry signs under
// epochLive; epochs below it are revoked in every gate's trust bundle (an
// earlier registry generation whose key leaked, say).
const (
	epochLive    = 5
	epochRevoked = 4
)

// keySet is the key material of a run: the registry's key, keys an
// attacker may hold (a revoked generation's, a retired one, one the bundle
// never listed), and the gate policy over the trust bundle. It is built
// once per run, is read-only afterwards, and its verifier cache only saves
// time: results never depend on it.
type keySet struct {
	registry *grant.SigningKey // active, epochs >= epochLive
	old      *grant.SigningKey // verify-only, epochs 1..epochRevoked, all revoked
	retired  *grant.SigningKey // retired
	evil     *grant.SigningKey // not in the bundle
	policy   *gate.Policy
}

// statusSkewMax is the gate's clock-skew bound; it equals the registry's
// ClockSkewMaxMs (both default 500 ms).
const statusSkewMax = 500 * time.Millisecond

func newKeySet() *keySet {
	k := &keySet{
		registry: derivedKey("k-registry"),
		old:      derivedKey("k-old"),
		retired:  derivedKey("k-retired"),
		evil:     derivedKey("k-evil"),
	}
	entry := func(sk *grant.SigningKey, minE, maxE uint64, st grant.KeyState) grant.BundleKey {
		return grant.BundleKey{KeyID: sk.KeyID, Alg: grant.AlgEd25519, PublicKey: grant.EncodeKey(sk.PublicKey()),
			MinEpoch: minE, MaxEpoch: maxE, State: st}
	}
	b, err := grant.NewBundle(grant.BundleFile{
		Version: 1, RevokedBelowEpoch: epochLive,
		Keys: []grant.BundleKey{
			entry(k.registry, epochLive, 0, grant.KeyActive),
			entry(k.old, 1, epochRevoked, grant.KeyVerifyOnly),
			entry(k.retired, 1, 0, grant.KeyRetired),
		},
	}, "")
	if err != nil {
		panic("sim: trust bundle: " + err.Error())
	}
	k.policy = &gate.Policy{Verifier: grant.NewVerifier(b, 1<<16), StatusSkewMax: statusSkewMax}
	if err := k.policy.Check(); err != nil {
		panic("sim: gate policy: " + err.Error())
	}
	return k
}

// derivedKey is a fixed Ed25519 key named id: keys are part of the
// simulated world, so they are the same in every run.
func derivedKey(id string) *grant.SigningKey {
	s := sha256.Sum256([]byte("fencegate/sim/" + id))
	k, err := grant.GenerateKey(grant.AlgEd25519, id, bytes.NewReader(s[:]))
	if err != nil {
		panic("sim: key: " + err.Error())
	}
	return k
}
