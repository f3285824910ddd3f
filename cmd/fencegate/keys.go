package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fencegate/fencegate/grant"
)

func init() {
	register(command{name: "keys", summary: "generate signing keys and edit trust bundles", run: runKeys})
}

const keysUsage = `usage:
  fencegate keys gen --id ID --out FILE [--alg ed25519|hmac-sha256]
  fencegate keys bundle add         --bundle FILE (--key KEYFILE | --id ID --public-key B64) [--min-epoch N] [--max-epoch N]
  fencegate keys bundle verify-only --bundle FILE --id ID   (overlap: verifies, no longer signs)
  fencegate keys bundle retire      --bundle FILE --id ID   (its proofs are rejected from now on)
  fencegate keys bundle revoke-epoch --bundle FILE --below N
  fencegate keys bundle show        --bundle FILE`

func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: missing subcommand\n%s", errUsage, keysUsage)
	}
	switch args[0] {
	case "gen":
		return runKeysGen(args[1:], stdout, stderr)
	case "bundle":
		return runKeysBundle(args[1:], stdout, stderr)
	}
	return fmt.Errorf("%w: unknown subcommand %q\n%s", errUsage, args[0], keysUsage)
}

func runKeysGen(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("keys gen", stderr)
	id := fs.String("id", "", "key ID (letters, digits, '.', '-', '_')")
	out := fs.String("out", "", "key file to write (mode 0600); refuses to overwrite")
	alg := fs.String("alg", string(grant.AlgEd25519), "ed25519 (default) or hmac-sha256")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *id == "" || *out == "" {
		return fmt.Errorf("%w: --id and --out are required", errUsage)
	}
	k, err := grant.GenerateKey(grant.Alg(*alg), *id, rand.Reader)
	if err != nil {
		return err
	}
	if _, err := os.Stat(*out); err == nil {
		return fmt.Errorf("%s exists; refusing to overwrite a key", *out)
	}
	if err := grant.WriteFileAtomic(*out, k.MarshalKeyFile(), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s key %s to %s\n", k.Alg, k.KeyID, *out)
	if pub := k.PublicKey(); pub != nil {
		fmt.Fprintf(stdout, "public key: %s\n", grant.EncodeKey(pub))
	}
	return nil
}

func runKeysBundle(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: missing bundle subcommand\n%s", errUsage, keysUsage)
	}
	sub := args[0]
	fs := newFlags("keys bundle "+sub, stderr)
	path := fs.String("bundle", "", "trust bundle file")
	keyFile := fs.String("key", "", "add: key file to take the key from")
	id := fs.String("id", "", "key ID")
	pub := fs.String("public-key", "", "add: Ed25519 public key, unpadded base64url")
	minEpoch := fs.Uint64("min-epoch", 1, "add: lowest issuer epoch the key may sign")
	maxEpoch := fs.Uint64("max-epoch", 0, "add: highest issuer epoch (0: no bound)")
	below := fs.Uint64("below", 0, "revoke-epoch: revoke every issuer epoch below this")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *path == "" {
		return fmt.Errorf("%w: --bundle is required", errUsage)
	}
	f, err := readBundleFile(*path, sub == "add")
	if err != nil {
		return err
	}
	switch sub {
	case "show":
		return showBundle(stdout, *path)
	case "add":
		var k grant.BundleKey
		k, err = bundleKeyFromFlags(*path, *keyFile, *id, *pub)
		k.MinEpoch, k.MaxEpoch = *minEpoch, *maxEpoch
		if err == nil {
			err = f.AddKey(k)
		}
	case "verify-only":
		err = f.SetKeyState(*id, grant.KeyVerifyOnly)
	case "retire":
		err = f.SetKeyState(*id, grant.KeyRetired)
	case "revoke-epoch":
		err = f.RevokeBelow(*below)
	default:
		return fmt.Errorf("%w: unknown bundle subcommand %q\n%s", errUsage, sub, keysUsage)
	}
	if err != nil {
		return err
	}
	// Load what we are about to write, secrets and all, before writing it.
	if _, err := grant.NewBundle(f, filepath.Dir(*path)); err != nil {
		return err
	}
	if err := grant.WriteFileAtomic(*path, f.Marshal(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: version %d\n", *path, f.Version)
	return nil
}

// readBundleFile reads a bundle's file form; a missing file is an empty
// version-0 bundle when create is set (the first add makes it version 1).
func readBundleFile(path string, create bool) (grant.BundleFile, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && create {
		return grant.BundleFile{}, nil
	}
	b, err := grant.LoadBundle(path)
	if err != nil {
		return grant.BundleFile{}, err
	}
	return b.File(), nil
}

func bundleKeyFromFlags(bundlePath, keyFile, id, pub string) (grant.BundleKey, error) {
	k := grant.BundleKey{State: grant.KeyActive}
	switch {
	case keyFile != "" && pub == "":
		sk, err := grant.LoadKeyFile(keyFile)
		if err != nil {
			return k, err
		}
		k.KeyID, k.Alg = sk.KeyID, sk.Alg
		if sk.Alg == grant.AlgEd25519 {
			k.PublicKey = grant.EncodeKey(sk.PublicKey())
			return k, nil
		}
		rel, err := filepath.Rel(filepath.Dir(bundlePath), keyFile)
		if err != nil {
			rel, _ = filepath.Abs(keyFile)
		}
		k.SecretFile = rel
		return k, nil
	case keyFile == "" && pub != "" && id != "":
		k.KeyID, k.Alg, k.PublicKey = id, grant.AlgEd25519, pub
		return k, nil
	}
	return k, fmt.Errorf("%w: add needs --key FILE, or --id and --public-key", errUsage)
}

func showBundle(w io.Writer, path string) error {
	b, err := grant.LoadBundle(path)
	if err != nil {
		return err
	}
	f := b.File()
	fmt.Fprintf(w, "bundle %s\nversion: %d\nrevokedBelowEpoch: %d\n", path, f.Version, f.RevokedBelowEpoch)
	for _, k := range f.Keys {
		epochs := fmt.Sprintf("%d..", k.MinEpoch)
		if k.MaxEpoch != 0 {
			epochs += fmt.Sprint(k.MaxEpoch)
		}
		fmt.Fprintf(w, "key %-12s %-11s %-12s epochs %s\n", k.KeyID, k.Alg, k.State, epochs)
	}
	return nil
}
