package sim

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
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
	// trustAll is the policy of the no-authentication negative control:
	// its bundle trusts every key above, for every epoch.
	trustAll *gate.Policy
	// revokedBelow is the bundle's revokedBelowEpoch, for status queries.
	revokedBelow uint64
}

// verifyCacheEntries bounds the gate's verify cache: a round re-verifies
// its few grants and status proofs on every segment.
const verifyCacheEntries = 1 << 16

// newKeySet builds the keys for alg. An HMAC trust bundle names its
// secrets by file, so for AlgHMACSHA256 the secrets are written to a
// temporary folder that lives only while the bundle is loaded.
func newKeySet(alg grant.Alg, skewBound time.Duration) (*keySet, error) {
	k := &keySet{
		registry: derivedKey(alg, "k-registry"),
		old:      derivedKey(alg, "k-old"),
		retired:  derivedKey(alg, "k-retired"),
		evil:     derivedKey(alg, "k-evil"),
	}
	dir := ""
	if alg == grant.AlgHMACSHA256 {
		var err error
		if dir, err = os.MkdirTemp("", "fencegate-sim-keys-"); err != nil {
			return nil, fmt.Errorf("sim: hmac keys: %w", err)
		}
		defer os.RemoveAll(dir)
	}
	entry := func(sk *grant.SigningKey, minE, maxE uint64, st grant.KeyState) (grant.BundleKey, error) {
		e := grant.BundleKey{KeyID: sk.KeyID, Alg: alg, MinEpoch: minE, MaxEpoch: maxE, State: st}
		if alg == grant.AlgEd25519 {
			e.PublicKey = grant.EncodeKey(sk.PublicKey())
			return e, nil
		}
		e.SecretFile = sk.KeyID + ".json"
		return e, os.WriteFile(filepath.Join(dir, e.SecretFile), sk.MarshalKeyFile(), 0o600)
	}
	var keys []grant.BundleKey
	for _, e := range []struct {
		sk         *grant.SigningKey
		minE, maxE uint64
		st         grant.KeyState
	}{
		{k.registry, epochLive, 0, grant.KeyActive},
		{k.old, 1, epochRevoked, grant.KeyVerifyOnly},
		{k.retired, 1, 0, grant.KeyRetired},
	} {
		bk, err := entry(e.sk, e.minE, e.maxE, e.st)
		if err != nil {
			return nil, fmt.Errorf("sim: key %s: %w", e.sk.KeyID, err)
		}
		keys = append(keys, bk)
	}
	b, err := grant.NewBundle(grant.BundleFile{Version: 1, RevokedBelowEpoch: epochLive, Keys: keys}, dir)
	if err != nil {
		return nil, fmt.Errorf("sim: trust bundle: %w", err)
	}
	k.policy = &gate.Policy{Verifier: grant.NewVerifier(b, verifyCacheEntries), StatusSkewMax: skewBound}
	k.revokedBelow = b.File().RevokedBelowEpoch
	if err := k.policy.Check(); err != nil {
		return nil, fmt.Errorf("sim: gate policy: %w", err)
	}
	var all []grant.BundleKey
	for _, sk := range []*grant.SigningKey{k.registry, k.old, k.retired, k.evil} {
		bk, err := entry(sk, 1, 0, grant.KeyActive)
		if err != nil {
			return nil, fmt.Errorf("sim: key %s: %w", sk.KeyID, err)
		}
		all = append(all, bk)
	}
	tb, err := grant.NewBundle(grant.BundleFile{Version: 1, Keys: all}, dir)
	if err != nil {
		return nil, fmt.Errorf("sim: trust-all bundle: %w", err)
	}
	k.trustAll = &gate.Policy{Verifier: grant.NewVerifier(tb, verifyCacheEntries), StatusSkewMax: skewBound}
	if err := k.trustAll.Check(); err != nil {
		return nil, fmt.Errorf("sim: trust-all policy: %w", err)
	}
	return k, nil
}

// derivedKey is a fixed key named id: keys are part of the simulated
// world, so they are the same in every run.
func derivedKey(alg grant.Alg, id string) *grant.SigningKey {
	s := sha256.Sum256([]byte("fencegate/sim/" + id))
	k, err := grant.GenerateKey(alg, id, bytes.NewReader(s[:]))
	if err != nil {
		panic("sim: key: " + err.Error())
	}
	return k
}
