//go:build unix

// Proves LoadKeyFile reads only a regular key file of at most
// KeyFileBytesMax bytes (a FIFO, a device, a directory and a file one
// byte over are refused at once, naming the path), and that SecretDigest
// names the secret alone, under its own domain: equal for equal secrets
// whatever the key ID, different for another secret, and not the plain
// SHA-256 of the secret (the negative control of the domain separation).
package grant_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/keptfile"
)

func TestLoadKeyFileTakesSmallRegularFilesOnly(t *testing.T) {
	dir := t.TempDir()
	k, err := grant.NewSigningKey(grant.AlgHMACSHA256, "gk-1", bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "gk-1.key")
	if err := os.WriteFile(good, k.MarshalKeyFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := grant.LoadKeyFile(good); err != nil || got.SecretDigest() != k.SecretDigest() {
		t.Fatalf("a regular key file: %v", err)
	}
	over := filepath.Join(dir, "over.key")
	padded := append(k.MarshalKeyFile(), bytes.Repeat([]byte{' '}, grant.KeyFileBytesMax)...)
	if err := os.WriteFile(over, padded[:grant.KeyFileBytesMax+1], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := grant.LoadKeyFile(over); !errors.Is(err, keptfile.ErrTooLarge) || !strings.Contains(err.Error(), over) {
		t.Fatalf("%d bytes: %v", grant.KeyFileBytesMax+1, err)
	}
	fifo := filepath.Join(dir, "fifo.key")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero", dir} {
		if _, err := grant.LoadKeyFile(p); !errors.Is(err, keptfile.ErrNotRegular) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want a refusal naming it", p, err)
		}
	}
}

func TestSecretDigestNamesTheSecretUnderItsOwnDomain(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, 32)
	a, _ := grant.NewSigningKey(grant.AlgHMACSHA256, "gk-1", secret)
	b, _ := grant.NewSigningKey(grant.AlgHMACSHA256, "gk-2", secret)
	c, _ := grant.NewSigningKey(grant.AlgHMACSHA256, "gk-1", bytes.Repeat([]byte{8}, 32))
	if a.SecretDigest() != b.SecretDigest() || a.SecretDigest() == c.SecretDigest() {
		t.Fatalf("digests %s %s %s", a.SecretDigest(), b.SecretDigest(), c.SecretDigest())
	}
	// The vector another implementation (the gate inside PostgreSQL)
	// checks itself against.
	want := sha256.Sum256(append([]byte("fencegate.keySecretDigest.v1\x00"), secret...))
	if a.SecretDigest() != "sha256:"+hex.EncodeToString(want[:]) {
		t.Fatalf("digest %s", a.SecretDigest())
	}
	plain := sha256.Sum256(secret)
	if a.SecretDigest() == "sha256:"+hex.EncodeToString(plain[:]) {
		t.Fatal("the digest is the secret's plain SHA-256")
	}
	if strings.Contains(a.SecretDigest(), hex.EncodeToString(secret)) {
		t.Fatal("the digest spells the secret")
	}
}
