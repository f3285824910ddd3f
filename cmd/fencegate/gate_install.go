package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/gate/pggate"
)

func init() { gateSubcommands = append(gateSubcommands, newGateInstallCmd) }

func newGateInstallCmd(g *gateFlags) *cobra.Command {
	var printScript bool
	var cryptoSchema string
	c := &cobra.Command{
		Use:   "install --db postgres://… | --print",
		Short: "install or upgrade the gate inside PostgreSQL (schema fencegate, PL/pgSQL and pgcrypto)",
		Long: `Install the gate inside PostgreSQL (package gate/pggate): the schema
fencegate with its tables and the SQL functions any client calls in its
own transaction, fencegate.apply(envelope, payload_digest) first among
them. Versions are applied in order, each once; running it again
upgrades or does nothing. It needs only PL/pgSQL and pgcrypto (created in
the schema fencegate when the database has none), so it works on a
managed PostgreSQL.

The connecting role becomes the gate's owner: it holds the HMAC keys
(fencegate gate enroll) that no other role can read. Grant the role
fencegate_writer to your application's roles and map each to the
workload identity its grants name (fencegate gate enroll --role).

--print writes instead the SQL that installs the gate on a database
without it, for psql (pgcrypto assumed in --crypto-schema); upgrade a
database that has it with gate install --db.`,
		Example: `  fencegate gate install --db postgres://admin@db/ledger
  fencegate gate install --print --crypto-schema public | psql -1 -d ledger`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if printScript {
				s, err := pggate.Script(cryptoSchema)
				if err != nil {
					return err
				}
				_, err = fmt.Fprint(c.OutOrStdout(), s)
				return err
			}
			return withPG(c.Context(), g, func(ctx context.Context, db *sql.DB) error {
				in, err := pggate.Install(ctx, db)
				if err != nil {
					return err
				}
				verb := "installed"
				if in.From == in.To {
					verb = "already at"
				} else if in.From > 0 {
					verb = fmt.Sprintf("upgraded from version %d to", in.From)
				}
				fmt.Fprintf(c.OutOrStdout(), "fencegate gate %s schema version %d (pgcrypto in schema %s)\n", verb, in.To, in.CryptoSchema)
				fmt.Fprintf(c.OutOrStdout(), "next: fencegate gate enroll --key GATE.key …; GRANT fencegate_writer TO <app role>; fencegate gate enroll --role <app role> --identity <owner>\n")
				return nil
			})
		},
	}
	c.Flags().BoolVar(&printScript, "print", false, "print the SQL instead of running it")
	c.Flags().StringVar(&cryptoSchema, "crypto-schema", "public", "with --print: the schema pgcrypto is installed in")
	return c
}

// withPG opens the --db PostgreSQL database for fn, bounded as one call.
func withPG(ctx context.Context, g *gateFlags, fn func(context.Context, *sql.DB) error) error {
	db, err := openPG(g)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := callContext(ctx)
	defer cancel()
	return fn(ctx, db)
}

// openPG opens the --db PostgreSQL database, refusing a --db that names
// none. Close it when done.
func openPG(g *gateFlags) (*sql.DB, error) {
	if !strings.HasPrefix(g.db, "postgres://") && !strings.HasPrefix(g.db, "postgresql://") && !strings.Contains(g.db, "=") {
		return nil, usagef("--db postgres://… (or a key=value DSN) is required: the gate inside PostgreSQL lives in a PostgreSQL database")
	}
	return pggate.Open(g.db, "")
}
