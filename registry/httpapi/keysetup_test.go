// Tests that serve's key setup generates a key and bundle once, reuses
// them afterwards, never rewrites an operator's bundle, and refuses a
// bundle that would make gates reject what the server signs.
package httpapi

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/grant"
)

func TestSetupKeyGeneratesOnceThenReuses(t *testing.T) {
	dir := t.TempDir()
	first, err := SetupKey(dir, "", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Generated || !first.WroteBundle || !strings.HasPrefix(first.Key.KeyID, "registry-") {
		t.Fatalf("first setup: %+v", first)
	}
	if fi, err := os.Stat(first.KeyPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v", fi.Mode(), err)
	}
	again, err := SetupKey(dir, "", 1, nil)
	if err != nil || again.Generated || again.WroteBundle || again.Key.KeyID != first.Key.KeyID {
		t.Fatalf("second setup: %+v %v", again, err)
	}
	// The written bundle verifies what the key signs.
	b, err := grant.LoadBundle(first.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)
	st := &grant.Status{Grant: grant.OperationRoot("a", "b"), State: grant.StateHeld, BackendRevision: 1, IssuerEpoch: 3, IssuedAt: now, ValidUntil: now}
	proof, err := again.Key.Sign(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := grant.NewVerifier(b, 0).Verify(st, proof); err != nil {
		t.Fatal(err)
	}
}

func TestSetupKeyRefusesAnUntrustingBundle(t *testing.T) {
	dir := t.TempDir()
	ks, err := SetupKey(dir, "", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := grant.GenerateKey(grant.AlgEd25519, "other", rand.Reader)
	otherPath := filepath.Join(dir, "other.json")
	os.WriteFile(otherPath, other.MarshalKeyFile(), 0o600)
	if _, err := SetupKey(dir, otherPath, 1, nil); err == nil || !strings.Contains(err.Error(), "does not hold signing key other") {
		t.Fatalf("bundle without the key: %v", err)
	}

	f := BundleFor(ks.Key, ks.KeyPath, dir)
	f.Keys[0].MaxEpoch = 2
	os.WriteFile(ks.BundlePath, f.Marshal(), 0o644)
	if _, err := SetupKey(dir, "", 3, nil); err == nil || !strings.Contains(err.Error(), "may not sign issuer epoch 3") {
		t.Fatalf("epoch outside the key's range: %v", err)
	}
	f.Keys[0].MaxEpoch = 0
	if err := f.SetKeyState(ks.Key.KeyID, grant.KeyRetired); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(ks.BundlePath, f.Marshal(), 0o644)
	if _, err := SetupKey(dir, "", 1, nil); err == nil || !strings.Contains(err.Error(), "retired") {
		t.Fatalf("retired key: %v", err)
	}
}

func TestSetupKeyHMAC(t *testing.T) {
	dir := t.TempDir()
	k, _ := grant.GenerateKey(grant.AlgHMACSHA256, "mac-1", rand.Reader)
	keyPath := filepath.Join(dir, "mac.json")
	os.WriteFile(keyPath, k.MarshalKeyFile(), 0o600)
	ks, err := SetupKey(filepath.Join(dir), keyPath, 1, nil)
	if err != nil || ks.Generated {
		t.Fatalf("%+v %v", ks, err)
	}
	b, err := grant.LoadBundle(ks.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	if sf := b.File().Keys[0].SecretFile; sf != "mac.json" {
		t.Fatalf("secretFile %q, want the key file relative to the bundle", sf)
	}
}

// TestPlanKeyWritesNothing: PlanKey makes and checks the key and bundle
// in memory; a data directory it refuses, or one it has only planned for,
// is left as it was, and Write then stores exactly what a SetupKey would.
func TestPlanKeyWritesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ks, err := PlanKey(dir, "", 1, nil)
	if err != nil || !ks.Generated || !ks.WroteBundle {
		t.Fatalf("%+v %v", ks, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("PlanKey touched the data directory: %v", err)
	}
	// An HMAC key whose file is missing by the time the bundle loads: refused, nothing written.
	k, _ := grant.GenerateKey(grant.AlgHMACSHA256, "mac-1", rand.Reader)
	keyPath := filepath.Join(t.TempDir(), "mac.json")
	os.WriteFile(keyPath, k.MarshalKeyFile(), 0o600)
	if _, err := PlanKey(dir, "relative-nowhere.json", 1, nil); err == nil {
		t.Fatal("a missing key file was planned")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused plan touched the data directory: %v", err)
	}
	if err := ks.Write(); err != nil {
		t.Fatal(err)
	}
	again, err := PlanKey(dir, "", 1, nil)
	if err != nil || again.Generated || again.WroteBundle || again.Key.KeyID != ks.Key.KeyID {
		t.Fatalf("after Write: %+v %v", again, err)
	}
	if _, err := PlanKey(dir, keyPath, 1, nil); err == nil || !strings.Contains(err.Error(), "does not hold signing key mac-1") {
		t.Fatalf("a key the existing bundle does not trust: %v", err)
	}
}
