package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/wire"
)

func init() { register(newPolicyCmd) }

func newPolicyCmd() *cobra.Command {
	c := parentCommand("policy", "raise a resource's policy generation at the registry (admin)",
		`Every grant carries its resource's policy generation; a gate refuses
grants below the generation it was told to require (its
min-policy-generation), so raising both retires every grant issued under
an older policy. The registry's generation only rises. After a switch of
the coordination backend that did not copy the registry's state
(fencegate registry export/import), raise it again on the new store to
what the gates require. Admin identities only (serve --admin); every
call is recorded in the registry's audit log with your identity and
--note. fencegate floor show RESOURCE prints the generation in force.`)
	reg := &endpointFlags{name: "registry"}
	c.PersistentFlags().SortFlags = false
	reg.add(c.PersistentFlags(), registryDefault, "the registry's URL")
	tokenFlag(c.PersistentFlags(), reg)
	c.AddCommand(newPolicyRaiseCmd(reg))
	return c
}

func newPolicyRaiseCmd(reg *endpointFlags) *cobra.Command {
	var gen uint64
	var note string
	raise := &cobra.Command{
		Use:   "raise RESOURCE --generation N --note TEXT",
		Short: "stamp every later grant of RESOURCE with policy generation N",
		Example: `  fencegate policy raise invoice-batch/2026-07-19 --generation 3 --note "new retention rules, CHG-31"
  fencegate floor show invoice-batch/2026-07-19      # policyGeneration: 3`,
		Args: exactArgs("RESOURCE"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkResourceArg(args[0]); err != nil {
				return err
			}
			if gen == 0 || note == "" {
				return usagef("--generation N and --note TEXT are required: the generation every later grant carries, and why")
			}
			return adminRaise(c, reg, args[0], "policy generation", func(ri wire.ResourceInfo) uint64 { return ri.PolicyGeneration },
				func(ctx context.Context, rc *httpclient.Client) (wire.ResourceInfo, error) {
					return rc.SetPolicy(ctx, wire.PolicyRequest{Resource: args[0], Generation: gen, Note: note})
				})
		},
	}
	raise.Flags().Uint64Var(&gen, "generation", 0, "the policy generation every later grant carries (raise only)")
	raise.Flags().StringVar(&note, "note", "", "why (a policy change, a ticket); recorded with your identity")
	return raise
}
