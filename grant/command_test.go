// Proves that a command proof verifies only as a command over the same
// bytes: never as a grant proof, never over other bytes, never under a
// revoked epoch or a retired key.
package grant_test

import (
	"crypto/rand"
	"errors"
	"testing"

	"github.com/fencegate/fencegate/grant"
)

func TestCommandProofDomainSeparated(t *testing.T) {
	k, err := grant.GenerateKey(grant.AlgEd25519, "k1", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := grant.NewBundle(grant.BundleFile{Version: 1, Keys: []grant.BundleKey{
		{KeyID: "k1", Alg: grant.AlgEd25519, PublicKey: grant.EncodeKey(k.PublicKey()), MinEpoch: 1, State: grant.KeyActive},
	}}, "")
	if err != nil {
		t.Fatal(err)
	}
	v := grant.NewVerifier(b, 0)
	body := []byte(`{"action":"resume","floor":3}`)
	proof := grant.SignCommand(body, k)
	if err := v.VerifyDigest(grant.SchemaGateCommand, grant.CommandDigest(body), 1, proof); err != nil {
		t.Fatalf("own command: %v", err)
	}
	for name, check := range map[string]func() error{
		"other bytes": func() error {
			return v.VerifyDigest(grant.SchemaGateCommand, grant.CommandDigest([]byte(`{"action":"resume","floor":9}`)), 1, proof)
		},
		"as a grant proof":  func() error { return v.VerifyDigest(grant.SchemaGrant, grant.CommandDigest(body), 1, proof) },
		"as a bundle proof": func() error { return v.VerifyDigest(grant.SchemaBundle, grant.CommandDigest(body), 1, proof) },
	} {
		if err := check(); !errors.Is(err, grant.ErrBadSignature) {
			t.Errorf("%s: %v, want ErrBadSignature", name, err)
		}
	}
	revoked, err := grant.NewBundle(grant.BundleFile{Version: 2, RevokedBelowEpoch: 2, Keys: b.File().Keys}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := grant.NewVerifier(revoked, 0).VerifyDigest(grant.SchemaGateCommand, grant.CommandDigest(body), 1, proof); !errors.Is(err, grant.ErrEpochRevoked) {
		t.Errorf("revoked epoch: %v, want ErrEpochRevoked", err)
	}
}
