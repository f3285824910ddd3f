package httpapi

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fencegate/fencegate/grant"
)

// File names inside a serve data directory.
const (
	// KeyFileName is the signing key serve generates on first start.
	KeyFileName = "signing-key.json"
	// BundleFileName is the trust bundle serve writes for gates.
	BundleFileName = "trust-bundle.json"
)

// KeySetup is the signing key a server uses and the trust bundle beside it.
type KeySetup struct {
	Key         *grant.SigningKey
	KeyPath     string
	BundlePath  string
	Generated   bool // the key is (PlanKey: will be) made by this setup
	WroteBundle bool // the bundle is (PlanKey: will be) written by this setup

	keyFile, bundleFile []byte // what Write writes, nil once written or when nothing is to be
}

// SetupKey finds or makes the signing key and its trust bundle: PlanKey,
// then Write.
func SetupKey(dataDir, keyPath string, issuerEpoch uint64, rand io.Reader) (*KeySetup, error) {
	ks, err := PlanKey(dataDir, keyPath, issuerEpoch, rand)
	if err != nil {
		return nil, err
	}
	return ks, ks.Write()
}

// PlanKey finds or makes the signing key and its trust bundle, and checks
// them, without writing anything: a server that cannot start leaves its
// data directory as it found it. Write then stores what it made.
//
// With keyPath empty, the key is dataDir/KeyFileName, generated (Ed25519,
// from rand; crypto/rand when nil) if it does not exist. The bundle is
// dataDir/BundleFileName: made, trusting the key for epochs from 1 up, if
// it does not exist; if it does, it must already trust the key (not
// retired, same public key) for issuerEpoch, or PlanKey fails rather than
// serve grants no gate would accept. An existing bundle is never
// rewritten: rotation is the operator's, through `fencegate keys bundle`.
// A bundle made here must load as written (an HMAC key's secretFile is
// resolved from dataDir): dataDir and keyPath should be absolute.
func PlanKey(dataDir, keyPath string, issuerEpoch uint64, rand io.Reader) (*KeySetup, error) {
	ks := &KeySetup{KeyPath: keyPath, BundlePath: filepath.Join(dataDir, BundleFileName)}
	if keyPath == "" {
		ks.KeyPath = filepath.Join(dataDir, KeyFileName)
		if !fileExists(ks.KeyPath) {
			k, err := generateKey(rand)
			if err != nil {
				return nil, err
			}
			ks.Key, ks.keyFile, ks.Generated = k, k.MarshalKeyFile(), true
		}
	}
	if ks.Key == nil {
		key, err := grant.LoadKeyFile(ks.KeyPath)
		if err != nil {
			return nil, fmt.Errorf("httpapi: signing key: %w", err)
		}
		ks.Key = key
	}
	var b *grant.Bundle
	var err error
	if fileExists(ks.BundlePath) {
		b, err = grant.LoadBundle(ks.BundlePath)
	} else {
		f := BundleFor(ks.Key, ks.KeyPath, dataDir)
		ks.bundleFile, ks.WroteBundle = f.Marshal(), true
		b, err = grant.ParseBundle(ks.bundleFile, dataDir)
	}
	if err != nil {
		return nil, fmt.Errorf("httpapi: trust bundle %s: %w", ks.BundlePath, err)
	}
	if err := checkTrusts(b, ks.Key, issuerEpoch); err != nil {
		return nil, fmt.Errorf("httpapi: trust bundle %s: %w", ks.BundlePath, err)
	}
	return ks, nil
}

// Write stores the key and the bundle PlanKey made (nothing when it found
// both), creating the data directory if need be. It writes each once.
func (ks *KeySetup) Write() error {
	if ks.keyFile != nil {
		if err := os.MkdirAll(filepath.Dir(ks.KeyPath), 0o700); err != nil {
			return fmt.Errorf("httpapi: signing key: %w", err)
		}
		if err := writeFileAtomic(ks.KeyPath, ks.keyFile, 0o600); err != nil {
			return fmt.Errorf("httpapi: signing key: %w", err)
		}
		ks.keyFile = nil
	}
	if ks.bundleFile != nil {
		if err := os.MkdirAll(filepath.Dir(ks.BundlePath), 0o700); err != nil {
			return fmt.Errorf("httpapi: trust bundle: %w", err)
		}
		if err := writeFileAtomic(ks.BundlePath, ks.bundleFile, 0o644); err != nil {
			return fmt.Errorf("httpapi: trust bundle: %w", err)
		}
		ks.bundleFile = nil
	}
	return nil
}

// BundleFor returns a version-1 bundle trusting k for every epoch from 1.
// An HMAC key's secretFile is keyPath relative to bundleDir when it can be.
func BundleFor(k *grant.SigningKey, keyPath, bundleDir string) grant.BundleFile {
	bk := grant.BundleKey{KeyID: k.KeyID, Alg: k.Alg, MinEpoch: 1, State: grant.KeyActive}
	if pub := k.PublicKey(); pub != nil {
		bk.PublicKey = base64.RawURLEncoding.EncodeToString(pub)
	} else {
		bk.SecretFile = keyPath
		if rel, err := filepath.Rel(bundleDir, keyPath); err == nil {
			bk.SecretFile = rel
		}
	}
	return grant.BundleFile{Version: 1, Keys: []grant.BundleKey{bk}}
}

// checkTrusts makes sure a gate holding b would accept k's proofs for epoch.
func checkTrusts(b *grant.Bundle, k *grant.SigningKey, epoch uint64) error {
	f := b.File()
	for _, bk := range f.Keys {
		if bk.KeyID != k.KeyID {
			continue
		}
		switch {
		case bk.Alg != k.Alg:
			return fmt.Errorf("key %s is %s in the bundle, %s in the key file", k.KeyID, bk.Alg, k.Alg)
		case k.PublicKey() != nil && bk.PublicKey != base64.RawURLEncoding.EncodeToString(k.PublicKey()):
			return fmt.Errorf("key %s: the bundle's public key is not the signing key's", k.KeyID)
		case bk.State == grant.KeyRetired:
			return fmt.Errorf("key %s is retired", k.KeyID)
		case epoch < f.RevokedBelowEpoch:
			return fmt.Errorf("issuer epoch %d is revoked (revokedBelowEpoch %d)", epoch, f.RevokedBelowEpoch)
		case epoch < bk.MinEpoch || bk.MaxEpoch != 0 && epoch > bk.MaxEpoch:
			return fmt.Errorf("key %s may not sign issuer epoch %d", k.KeyID, epoch)
		}
		return nil
	}
	return fmt.Errorf("does not hold signing key %s", k.KeyID)
}

// generateKey makes an Ed25519 key. Its ID is "registry-" and 8 hex
// digits of its public key's SHA-256, so two generated keys are told
// apart in a bundle.
func generateKey(r io.Reader) (*grant.SigningKey, error) {
	if r == nil {
		r = rand.Reader
	}
	seed := make([]byte, ed25519.SeedSize)
	if _, err := io.ReadFull(r, seed); err != nil {
		return nil, fmt.Errorf("httpapi: signing key: %w", err)
	}
	sum := sha256.Sum256(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))
	return grant.NewSigningKey(grant.AlgEd25519, "registry-"+hex.EncodeToString(sum[:4]), seed)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// writeFileAtomic writes through a temporary file, fsync and rename, so a
// gate reloading the bundle never reads half a file.
func writeFileAtomic(path string, b []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
