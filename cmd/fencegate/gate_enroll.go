package main

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/grant"
)

func init() { gateSubcommands = append(gateSubcommands, newGateEnrollCmd) }

type enrollOptions struct {
	keyFile, state, role, identity  string
	minEpoch, maxEpoch, revokeBelow uint64
	// the registry half (gate_enroll_registry.go)
	registryKeys, gate string
	resources          []string
}

func newGateEnrollCmd(g *gateFlags) *cobra.Command {
	o := &enrollOptions{}
	c := &cobra.Command{
		Use:   "enroll [--db postgres://…] (--key FILE [--registry-keys FILE --gate-name NAME --resources P] | --role ROLE --identity ID | --revoke-below N)",
		Short: "give the gate inside PostgreSQL its HMAC key (and the registry its half), its callers, its revocations",
		Long: `Configure the gate inside PostgreSQL (fencegate gate install first), as
its owner role:

  --key FILE       enroll an HMAC-SHA256 key file (fencegate keys gen --alg
                   hmac-sha256) with --min-epoch, --max-epoch and --state, as
                   a trust bundle lists it. The database then checks "mac:"
                   proofs under it; no other role can read it. Rotate by
                   enrolling the new key active and the old one
                   verify-only, later retired.
  --role ROLE      map the login role ROLE to the workload identity --identity
                   (the owner its grants name). Grant it fencegate_writer.
  --revoke-below N refuse every issuer epoch below N (only rises).

A key per gate: with --registry-keys FILE --gate-name NAME, the same key is
also written into the registry's gate-keys file (serve --gate-keys FILE,
gateKeys.v1) as gate NAME's, for the resources --resources names
('ledger/*'; required for a new gate). The registry then sends, with
every grant for those resources, NAME's own HMAC proofs beside its
Ed25519 ones; the database picks them by key ID. No other gate holds the
key, so a database that leaks it can forge nothing another gate accepts.
The file names the key file; the secret stays in it. Without --db only
the file is written; with both, the database first (a gate must know a
key before the registry signs with it). A new active key moves the
gate's old one to verify-only (the registry stops signing with it); once
no proof under it can still be in flight, retire it with --state retired
at both. Reload serve (SIGHUP) after each change of the file.

A key ID is used once, forever: the database (schema version 5) and
serve's key history refuse an ID that comes back with another secret,
after it was removed, or in a state before one it reached (retired →
active); give a new secret a new ID (fencegate keys gen --id NEW).`,
		Example: `  fencegate keys gen --id gate-ledger --alg hmac-sha256 --out gate-ledger.key
  fencegate gate enroll --db postgres://admin@db/ledger --key gate-ledger.key --min-epoch 1
  fencegate gate enroll --db postgres://admin@db/ledger --role ledger_app --identity spiffe://example.org/ledger
  fencegate gate enroll --db postgres://admin@db/ledger --key gate-ledger.key \
    --registry-keys /etc/fencegate/gate-keys.json --gate-name ledger-db --resources 'ledger/*'`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if o.keyFile == "" && o.role == "" && o.revokeBelow == 0 {
				return usagef("give --key FILE, --role ROLE --identity ID, or --revoke-below N")
			}
			if (o.role == "") != (o.identity == "") {
				return usagef("--role and --identity go together")
			}
			if o.registryKeys != "" && (o.keyFile == "" || o.gate == "") {
				return usagef("--registry-keys needs --key FILE and --gate-name NAME (and --resources for a new gate)")
			}
			if o.registryKeys == "" && (o.gate != "" || len(o.resources) > 0) {
				return usagef("--gate-name and --resources go with --registry-keys FILE")
			}
			var key *pggate.Key
			if o.keyFile != "" {
				k, err := enrollKey(o)
				if err != nil {
					return err
				}
				key = &k
			}
			if o.registryKeys != "" && g.db == "" && o.role == "" && o.revokeBelow == 0 {
				return enrollAtRegistry(o, c.OutOrStdout())
			}
			err := withPG(c.Context(), g, func(ctx context.Context, db *sql.DB) error {
				return runEnroll(ctx, db, o, key, c)
			})
			if err != nil || o.registryKeys == "" {
				return err
			}
			return enrollAtRegistry(o, c.OutOrStdout())
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.keyFile, "key", "", "an hmac-sha256 key file to enroll")
	fs.Uint64Var(&o.minEpoch, "min-epoch", 1, "with --key: the lowest issuer epoch the key may sign")
	fs.Uint64Var(&o.maxEpoch, "max-epoch", 0, "with --key: the highest issuer epoch the key may sign (0: no bound)")
	fs.StringVar(&o.state, "state", string(grant.KeyActive), "with --key: active, verify-only or retired")
	fs.StringVar(&o.role, "role", "", "a database login role to map to --identity")
	fs.StringVar(&o.identity, "identity", "", "with --role: the workload identity its grants name as owner")
	fs.Uint64Var(&o.revokeBelow, "revoke-below", 0, "revoke every issuer epoch below this one")
	fs.StringVar(&o.registryKeys, "registry-keys", "", "with --key: also write the key into this registry gate-keys file (serve --gate-keys) as --gate-name's")
	fs.StringVar(&o.gate, "gate-name", "", "with --registry-keys: the gate's name at the registry")
	fs.StringSliceVar(&o.resources, "resources", nil, "with --registry-keys: the resource patterns the gate protects ('ledger/*'; repeatable)")
	return c
}

// enrollKey reads and checks the key file o names.
func enrollKey(o *enrollOptions) (pggate.Key, error) {
	sk, err := grant.LoadKeyFile(o.keyFile)
	if err != nil {
		return pggate.Key{}, err
	}
	switch grant.KeyState(o.state) {
	case grant.KeyActive, grant.KeyVerifyOnly, grant.KeyRetired:
	default:
		return pggate.Key{}, usagef("--state %q: want active, verify-only or retired", o.state)
	}
	return pggate.KeyOf(sk, o.minEpoch, o.maxEpoch, grant.KeyState(o.state))
}

func runEnroll(ctx context.Context, db *sql.DB, o *enrollOptions, key *pggate.Key, c *cobra.Command) error {
	out := c.OutOrStdout()
	if key != nil {
		if err := pggate.SetKey(ctx, db, *key); err != nil {
			return err
		}
		fmt.Fprintf(out, "enrolled key %s (%s, epochs %d..%s)\n", key.ID, key.State, key.MinEpoch, epochText(key.MaxEpoch))
	}
	if o.role != "" {
		if err := pggate.MapCaller(ctx, db, o.role, o.identity); err != nil {
			return err
		}
		fmt.Fprintf(out, "role %s writes as %s (GRANT fencegate_writer TO %s if not done)\n", o.role, o.identity, o.role)
	}
	if o.revokeBelow > 0 {
		if err := pggate.SetRevokedBelow(ctx, db, o.revokeBelow); err != nil {
			return err
		}
		fmt.Fprintf(out, "issuer epochs below %d revoked\n", o.revokeBelow)
	}
	return nil
}

func epochText(e uint64) string {
	if e == 0 {
		return "∞"
	}
	return fmt.Sprint(e)
}
