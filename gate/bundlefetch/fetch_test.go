// Proves the fetcher keeps the last good bundle: a newer bundle signed by
// a trusted key is installed and written to the gate's file; an
// unreachable source, an unsigned, forged, older or regressing bundle
// changes nothing (the verifier, the file) and is reported; and a
// restart from the written file continues the chain.
package bundlefetch_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/gate/bundlefetch"
	"github.com/fencegate/fencegate/grant"
)

func key(t *testing.T, id string) *grant.SigningKey {
	t.Helper()
	s := sha256.Sum256([]byte("bundlefetch/" + id))
	k, err := grant.NewSigningKey(grant.AlgEd25519, id, s[:])
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func entry(k *grant.SigningKey, st grant.KeyState) grant.BundleKey {
	return grant.BundleKey{KeyID: k.KeyID, Alg: k.Alg, PublicKey: grant.EncodeKey(k.PublicKey()), MinEpoch: 1, State: st}
}

func TestFetcherKeepsLastGood(t *testing.T) {
	k1, k2, evil := key(t, "k1"), key(t, "k2"), key(t, "evil")
	path := filepath.Join(t.TempDir(), "trust-bundle.json")
	v1 := grant.BundleFile{Version: 1, Keys: []grant.BundleKey{entry(k1, grant.KeyActive)}}
	if err := os.WriteFile(path, v1.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := grant.LoadBundle(path)
	if err != nil {
		t.Fatal(err)
	}
	v := grant.NewVerifier(b, 0)
	var serve grant.SignedBundle
	var down error
	f := &bundlefetch.Fetcher{Verifier: v, Path: path, Source: func(context.Context) (grant.SignedBundle, error) { return serve, down }}
	sign := func(bf grant.BundleFile, k *grant.SigningKey) grant.SignedBundle {
		sb, err := grant.SignBundle(bf, k)
		if err != nil {
			t.Fatal(err)
		}
		return sb
	}
	v2 := grant.BundleFile{Version: 2, Keys: []grant.BundleKey{entry(k1, grant.KeyActive), entry(k2, grant.KeyActive)}}
	ctx := context.Background()

	for _, c := range []struct {
		name   string
		serve  grant.SignedBundle
		down   error
		code   string
		errors bool
	}{
		{"unreachable", grant.SignedBundle{}, errors.New("connection refused"), "", true},
		{"unsigned", grant.SignedBundle{Bundle: string(v2.Marshal())}, nil, "BUNDLE_UNSIGNED", true},
		{"forged", sign(v2, evil), nil, "UNKNOWN_KEY", true},
		{"same version again", sign(v1, k1), nil, "", false},
	} {
		serve, down = c.serve, c.down
		updated, err := f.Once(ctx)
		if updated || (err != nil) != c.errors || grant.CodeOf(err) != c.code {
			t.Errorf("%s: updated %t, err %v; want no update, code %q", c.name, updated, err, c.code)
		}
		if v.Bundle().Version() != 1 {
			t.Fatalf("%s: the verifier moved to version %d", c.name, v.Bundle().Version())
		}
		if onDisk, _ := grant.LoadBundle(path); onDisk.Version() != 1 {
			t.Fatalf("%s: the file moved to version %d", c.name, onDisk.Version())
		}
	}
	if st := f.Status(); st.Refused != 2 || st.LastError != nil || st.Version != 1 {
		t.Errorf("status %+v: want 2 refused (unsigned, forged), the last poll fine, version 1", st)
	}
	serve, down = sign(v2, k1), nil
	if updated, err := f.Once(ctx); !updated || err != nil || v.Bundle().Version() != 2 {
		t.Fatalf("a good v2: updated %t err %v version %d", updated, err, v.Bundle().Version())
	}
	// A restart loads the written file, which now trusts k2: the next
	// bundle, signed by k2 alone, is accepted.
	b2, err := grant.LoadBundle(path)
	if err != nil || b2.Version() != 2 {
		t.Fatalf("the accepted bundle was not written: %v", err)
	}
	v3 := grant.BundleFile{Version: 3, Keys: []grant.BundleKey{entry(k1, grant.KeyRetired), entry(k2, grant.KeyActive)}}
	restarted := &bundlefetch.Fetcher{Verifier: grant.NewVerifier(b2, 0), Path: path, Source: func(context.Context) (grant.SignedBundle, error) { return sign(v3, k2), nil }}
	if updated, err := restarted.Once(ctx); !updated || err != nil {
		t.Fatalf("v3 after restart: %t %v", updated, err)
	}
	// Rolling back to v2 is refused: older.
	restarted.Source = func(context.Context) (grant.SignedBundle, error) { return sign(v2, k1), nil }
	if updated, _ := restarted.Once(ctx); updated || restarted.Verifier.Bundle().Version() != 3 {
		t.Fatal("rolled back to v2")
	}
}
