package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

func init() { register(newFloorCmd) }

// registryDefault is where the client commands look for the registry
// unless told otherwise: serve's default --listen.
const registryDefault = "http://127.0.0.1:7420"

func newFloorCmd() *cobra.Command {
	c := parentCommand("floor", "raise or show a resource's fence floor at the registry (admin)",
		`The registry issues max(highestFence, floor, generation<<32) + 1 as a
resource's next fence. Raise one resource's floor above the highest fence
its gate has seen after a FENCE_REGRESSION; after a restore or a switch of
the store, which affect every resource, bump the fence range instead
(fencegate fence-range bump). The floor only rises. Admin identities only
(serve --admin); every call is recorded in the registry's audit log with
your identity and --note.`)
	reg := &endpointFlags{name: "registry"}
	c.PersistentFlags().SortFlags = false
	reg.add(c.PersistentFlags(), registryDefault, "the registry's URL")
	tokenFlag(c.PersistentFlags(), reg)
	c.AddCommand(newFloorRaiseCmd(reg), newFloorShowCmd(reg))
	return c
}

func newFloorRaiseCmd(reg *endpointFlags) *cobra.Command {
	var above uint64
	var note string
	raise := &cobra.Command{
		Use:   "raise RESOURCE --above N --note TEXT",
		Short: "make every later fence of RESOURCE exceed N",
		Example: `  fencegate gate status invoice-batch/2026-07-19 --db ledger.db     # highestFence 42
  fencegate floor raise invoice-batch/2026-07-19 --above 43 --note "etcd restored from 02:00 snapshot, INC-7"`,
		Args: exactArgs("RESOURCE"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkResourceArg(args[0]); err != nil {
				return err
			}
			if above == 0 || note == "" {
				return usagef("--above N and --note TEXT are required: the fence every later grant must exceed, and why")
			}
			return adminRaise(c, reg, args[0], "floor", func(ri wire.ResourceInfo) uint64 { return ri.Floor },
				func(ctx context.Context, rc *httpclient.Client) (wire.ResourceInfo, error) {
					return rc.Floor(ctx, wire.FloorRequest{Resource: args[0], Fence: above, Note: note})
				})
		},
	}
	raise.Flags().Uint64Var(&above, "above", 0, "every later fence of the resource exceeds this (the gate's highestFence + 1 after a regression)")
	raise.Flags().StringVar(&note, "note", "", "why (an incident, a ticket); recorded with your identity")
	return raise
}

func newFloorShowCmd(reg *endpointFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show RESOURCE",
		Short: "the registry's linearizable view of RESOURCE: highestFence, floor, holder, waiters",
		Args:  exactArgs("RESOURCE"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkResourceArg(args[0]); err != nil {
				return err
			}
			rc, err := reg.registryClient()
			if err != nil {
				return err
			}
			ctx, cancel := callContext(c.Context())
			defer cancel()
			info, err := rc.Resource(ctx, args[0])
			if err != nil {
				return adminErr(err)
			}
			printResourceInfo(c.OutOrStdout(), info)
			return nil
		},
	}
}

func printResourceInfo(w io.Writer, ri wire.ResourceInfo) {
	holder := "none"
	if ri.HolderLease != "" {
		holder = fmt.Sprintf("%s (lease %s)", ri.HolderOwner, ri.HolderLease)
	}
	next := "none: the fence range is used up (fencegate fence-range bump)"
	if ri.NextFence != 0 {
		next = fmt.Sprintf("> %d (fence range generation %d)", ri.NextFence-1, ri.FenceGeneration)
	}
	fmt.Fprintf(w, "resource:         %s\nhighestFence:     %d\nfloor:            %d\nnext fence:       %s\npolicyGeneration: %d\nholder:           %s\nwaiters:          %d\n",
		ri.Resource, ri.HighestFence, ri.Floor, next, ri.PolicyGeneration, holder, ri.Waiters)
}

// adminRaise runs an admin call that raises one of resource's numbers
// (what, read by field) through call, and prints it before → after and the
// resource's view.
func adminRaise(c *cobra.Command, reg *endpointFlags, resource, what string, field func(wire.ResourceInfo) uint64,
	call func(context.Context, *httpclient.Client) (wire.ResourceInfo, error)) error {
	rc, err := reg.registryClient()
	if err != nil {
		return err
	}
	ctx, cancel := callContext(c.Context())
	defer cancel()
	before, err := rc.Resource(ctx, resource)
	if err != nil {
		return adminErr(err)
	}
	after, err := call(ctx, rc)
	if err != nil {
		return adminErr(err)
	}
	w := c.OutOrStdout()
	if field(after) == field(before) {
		fmt.Fprintf(w, "%s of %s unchanged at %d\n", what, resource, field(after))
	} else {
		fmt.Fprintf(w, "%s of %s raised %d → %d\n", what, resource, field(before), field(after))
	}
	printResourceInfo(w, after)
	return nil
}

// checkResourceArg validates a RESOURCE argument before anything is sent.
func checkResourceArg(r string) error {
	if err := grant.ValidateResource(r); err != nil {
		return usagef("resource %q: %v", r, err)
	}
	return nil
}

// devTokenHint names serve --dev's token, which a first-hour user is
// most likely to be missing.
const devTokenHint = "fencegate serve --dev's is " + DevToken

// refusalErr says what to do about a refusal of the caller's identity by
// a worker's command (lock, elect, status): which flag carries the token,
// or which policy refused it.
func refusalErr(err error) error {
	var api *httpclient.APIError
	if !errors.As(err, &api) {
		return err
	}
	switch api.Code {
	case wire.CodeUnauthenticated:
		return fmt.Errorf("%w: give your identity's token with --token or FENCEGATE_TOKEN (%s), or a client certificate", err, devTokenHint)
	case wire.CodeForbidden, wire.CodeForbiddenResource:
		return fmt.Errorf("%w: the registry's resource policy (serve --authz-policy) does not let your identity do this to this resource", err)
	}
	return err
}

// adminErr says what to do about the registry's refusals an operator meets.
func adminErr(err error) error {
	var api *httpclient.APIError
	if !errors.As(err, &api) {
		if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "connection refused") {
			return fmt.Errorf("%w (is fencegate serve running there? check --registry or FENCEGATE_REGISTRY)", err)
		}
		return err
	}
	switch api.Code {
	case wire.CodeUnauthenticated:
		return fmt.Errorf("%w: give the token of an admin identity (--token or FENCEGATE_TOKEN; %s) or a client certificate", err, devTokenHint)
	case wire.CodeForbidden:
		return fmt.Errorf("%w: the registry names its admins with serve --admin IDENTITY", err)
	}
	return err
}
