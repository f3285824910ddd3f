package main

import (
	"fmt"

	"github.com/fencegate/fencegate/wire"
	"github.com/spf13/cobra"
)

func init() { register(newEpochCmd) }

func newEpochCmd() *cobra.Command {
	c := parentCommand("epoch", "revoke issuer epochs at the registry (admin)",
		`Issuer epochs name the registry's signing generations. Revoking every
epoch below N makes the registry report their grants REVOKED, refuse them
proofs and end their leases. Gates learn it from their trust bundle:
revoke there too (fencegate keys bundle revoke-epoch --below N). The line
only rises. Admin identities only; recorded with your identity and --note.`)
	reg := &endpointFlags{name: "registry"}
	reg.add(c.PersistentFlags(), registryDefault, "the registry's URL")
	tokenFlag(c.PersistentFlags(), reg)
	var below uint64
	var note string
	revoke := &cobra.Command{
		Use:     "revoke --below N --note TEXT",
		Short:   "revoke every issuer epoch below N",
		Example: `  fencegate epoch revoke --below 38 --note "key k1 leaked, INC-9"` + "\n" + `  fencegate keys bundle revoke-epoch --bundle trust.json --below 38`,
		RunE: func(c *cobra.Command, _ []string) error {
			if below == 0 || note == "" {
				return usagef("--below N and --note TEXT are required: every issuer epoch below N is revoked, and why")
			}
			rc, err := reg.registryClient()
			if err != nil {
				return err
			}
			ctx, cancel := callContext(c.Context())
			defer cancel()
			line, err := rc.RevokeEpochs(ctx, wire.RevokeEpochsRequest{Below: below, Note: note})
			if err != nil {
				return adminErr(err)
			}
			w := c.OutOrStdout()
			fmt.Fprintf(w, "registry: issuer epochs below %d are revoked\n", line)
			if line > below {
				fmt.Fprintf(w, "(the line was already %d; it never goes down)\n", line)
			}
			fmt.Fprintf(w, "gates: run fencegate keys bundle revoke-epoch --bundle BUNDLE --below %d and distribute the bundle\n", line)
			return nil
		},
	}
	revoke.Flags().Uint64Var(&below, "below", 0, "revoke every issuer epoch below this")
	revoke.Flags().StringVar(&note, "note", "", "why; recorded with your identity")
	c.AddCommand(revoke)
	return c
}
