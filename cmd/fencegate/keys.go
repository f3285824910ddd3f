package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/grant"
)

func init() { register(newKeysCmd) }

func newKeysCmd() *cobra.Command {
	c := parentCommand("keys", "generate signing keys and edit trust bundles",
		`Signing keys (what the registry signs with) and trust bundles (what every
gate verifies against). Every bundle edit raises the bundle's version; a
gate replaces its bundle only with a higher version. See docs/operations.md
for rotation (add → verify-only → retire) and epoch revocation.`)
	c.AddCommand(newKeysGenCmd(), newKeysBundleCmd())
	return c
}

func newKeysGenCmd() *cobra.Command {
	var id, out, alg string
	c := &cobra.Command{
		Use:     "gen --id ID --out FILE",
		Short:   "generate a signing key file (mode 0600)",
		Example: "  fencegate keys gen --id k1 --out k1.key\n  fencegate keys gen --id m1 --alg hmac-sha256 --out m1.key",
		RunE: func(c *cobra.Command, _ []string) error {
			if id == "" || out == "" {
				return usagef("--id and --out are required: the key's ID and the file to write")
			}
			if err := grant.ValidateKeyID(id); err != nil {
				return usagef("--id %q: %v", id, err)
			}
			if a := grant.Alg(alg); a != grant.AlgEd25519 && a != grant.AlgHMACSHA256 {
				return usagef("--alg %q: want ed25519 or hmac-sha256", alg)
			}
			k, err := grant.GenerateKey(grant.Alg(alg), id, rand.Reader)
			if err != nil {
				return err
			}
			if _, err := os.Stat(out); err == nil {
				return fmt.Errorf("%s exists; refusing to overwrite a key (choose another --out, or remove it first)", out)
			}
			if err := grant.WriteFileAtomic(out, k.MarshalKeyFile(), 0o600); err != nil {
				return err
			}
			w := c.OutOrStdout()
			fmt.Fprintf(w, "wrote %s key %s to %s\n", k.Alg, k.KeyID, out)
			if pub := k.PublicKey(); pub != nil {
				fmt.Fprintf(w, "public key: %s\n", grant.EncodeKey(pub))
			}
			return nil
		},
	}
	c.Flags().StringVar(&id, "id", "", "key ID (letters, digits, '.', '-', '_')")
	c.Flags().StringVar(&out, "out", "", "key file to write (mode 0600); refuses to overwrite")
	c.Flags().StringVar(&alg, "alg", string(grant.AlgEd25519), "ed25519 (default) or hmac-sha256")
	return c
}

// bundleEdit is one `keys bundle` edit: check validates its flags before
// the bundle is read; edit changes f. Errors say what is wrong.
type bundleEdit struct {
	check func() error
	edit  func(path string, f *grant.BundleFile) error
}

func newKeysBundleCmd() *cobra.Command {
	c := parentCommand("bundle", "edit and show trust bundles", "")
	var keyFile, pub, id string
	var minEpoch, maxEpoch, below uint64
	add := bundleCmd("add --bundle FILE (--key KEYFILE | --id ID --public-key B64)", "add a key (creates the bundle if missing)", true,
		bundleEdit{edit: func(path string, f *grant.BundleFile) error {
			k, err := bundleKeyFromFlags(path, keyFile, id, pub)
			if err != nil {
				return err
			}
			k.MinEpoch, k.MaxEpoch = minEpoch, maxEpoch
			return f.AddKey(k)
		}})
	add.Flags().StringVar(&keyFile, "key", "", "key file to take the key from")
	add.Flags().StringVar(&id, "id", "", "key ID (with --public-key)")
	add.Flags().StringVar(&pub, "public-key", "", "Ed25519 public key, unpadded base64url (with --id)")
	add.Flags().Uint64Var(&minEpoch, "min-epoch", 1, "lowest issuer epoch the key may sign")
	add.Flags().Uint64Var(&maxEpoch, "max-epoch", 0, "highest issuer epoch (0: no bound)")
	stateCmd := func(use, short string, st grant.KeyState) *cobra.Command {
		var kid string
		sc := bundleCmd(use+" --bundle FILE --id ID", short, false, bundleEdit{
			check: func() error {
				if kid == "" {
					return usagef("--id is required: the key to mark %s (see fencegate keys bundle show)", st)
				}
				return nil
			},
			edit: func(_ string, f *grant.BundleFile) error { return f.SetKeyState(kid, st) },
		})
		sc.Flags().StringVar(&kid, "id", "", "key ID")
		return sc
	}
	revoke := bundleCmd("revoke-epoch --bundle FILE --below N", "revoke every issuer epoch below N (the line only rises)", false,
		bundleEdit{
			check: func() error {
				if below == 0 {
					return usagef("--below is required: every issuer epoch below it is revoked")
				}
				return nil
			},
			edit: func(_ string, f *grant.BundleFile) error { return f.RevokeBelow(below) },
		})
	revoke.Flags().Uint64Var(&below, "below", 0, "revoke every issuer epoch below this")
	var showPath string
	show := &cobra.Command{
		Use:   "show --bundle FILE",
		Short: "print a bundle's version, revoked line and keys",
		RunE: func(c *cobra.Command, _ []string) error {
			if showPath == "" {
				return usagef("--bundle is required")
			}
			return showBundle(c.OutOrStdout(), showPath)
		},
	}
	show.Flags().StringVar(&showPath, "bundle", "", "trust bundle file")
	c.AddCommand(add,
		stateCmd("verify-only", "mark a key verify-only (overlap: verifies, no longer signs)", grant.KeyVerifyOnly),
		stateCmd("retire", "retire a key (its proofs are rejected from now on)", grant.KeyRetired),
		revoke, show)
	return c
}

// bundleCmd is a bundle edit with its --bundle flag: read (or, with
// create, start) the bundle, edit it, check that the result loads, write
// it atomically with its version raised.
func bundleCmd(use, short string, create bool, e bundleEdit) *cobra.Command {
	var path string
	c := &cobra.Command{Use: use, Short: short}
	c.RunE = func(c *cobra.Command, _ []string) error {
		if path == "" {
			return usagef("--bundle is required: the trust bundle file to edit")
		}
		if e.check != nil {
			if err := e.check(); err != nil {
				return err
			}
		}
		f, err := readBundleFile(path, create)
		if err != nil {
			return err
		}
		if err := e.edit(path, &f); err != nil {
			return err
		}
		// Load what we are about to write, secrets and all, before writing it.
		if _, err := grant.NewBundle(f, filepath.Dir(path)); err != nil {
			return err
		}
		if err := grant.WriteFileAtomic(path, f.Marshal(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(c.OutOrStdout(), "%s: version %d\n", path, f.Version)
		return nil
	}
	c.Flags().StringVar(&path, "bundle", "", "trust bundle file")
	return c
}

// readBundleFile reads a bundle's file form; a missing file is an empty
// version-0 bundle when create is set (the first add makes it version 1).
func readBundleFile(path string, create bool) (grant.BundleFile, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if create {
			return grant.BundleFile{}, nil
		}
		return grant.BundleFile{}, fmt.Errorf("no bundle at %s: create one with fencegate keys bundle add --bundle %s --key KEYFILE", path, path)
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
	case keyFile != "" && pub == "" && id == "":
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
	case keyFile != "":
		return k, usagef("--key takes the ID and public key from the key file: drop --id and --public-key")
	}
	return k, usagef("add needs --key KEYFILE, or --id and --public-key together")
}

func showBundle(w io.Writer, path string) error {
	if _, err := readBundleFile(path, false); err != nil {
		return err
	}
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
