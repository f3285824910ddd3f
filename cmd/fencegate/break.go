package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/fencegate/fencegate/wire"

	"github.com/spf13/cobra"
)

// `fencegate break`: end a lease now and hand the resource on (an admin,
// or an identity the resource policy lets break it).

func init() { register(newBreakCmd) }

const breakLong = `End RESOURCE's lease now, whoever holds it, and hand the resource to the
next waiter at once: the way out of a lock held by a stuck or frozen
process. An admin (serve --admin), or an identity the resource policy
lets break the resource, may do it; it is recorded in the registry's
audit log with your identity and --note.

Why this is safe here and nowhere else: the next grant's fence is
higher, so once the new holder has written, every gate refuses the old
holder's late writes (STALE_OWNER), whatever its clock or its belief
says. With a lease-only lock service, breaking a lock lets two writers
run; with fencegate the old one is fenced off at the resource. The old
holder learns at its next renewal (LEASE_BROKEN) and stops.

What RESOURCE names decides what ends, each in one write:
  a lock                 its holder
  a read/write lock      whoever holds it: its writer, or every reader
  NAME/_read             every reader of NAME (never one: a writer waits
                         for them all), so a queued writer is served
  NAME/_slot.I           that semaphore permit; the queue's head takes it
  a lock set's member    the whole set: every member's lease, since the
                         set's owner has lost it all (with a token that
                         is not an admin's, you need break on every member)
A semaphore's own NAME holds no lease: name a slot (ls shows them).`

func newBreakCmd() *cobra.Command {
	reg := &endpointFlags{name: "registry"}
	var out outputFlag
	var note string
	c := &cobra.Command{
		Use:     "break RESOURCE --note TEXT",
		Short:   "end RESOURCE's lease now and hand it to the next waiter (admin)",
		Long:    breakLong,
		Example: `  fencegate break jobs/nightly --note "worker 7 frozen since 02:10, INC-4411"`,
		Args:    exactArgs("RESOURCE"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			if err := checkResourceArg(args[0]); err != nil {
				return err
			}
			if strings.TrimSpace(note) == "" {
				return usagef("--note TEXT is required: why the lock is broken (it goes to the audit log)")
			}
			rc, err := reg.registryClient()
			if err != nil {
				return err
			}
			ctx, cancel := callContext(c.Context())
			defer cancel()
			res, err := rc.Break(ctx, args[0], note)
			if err != nil {
				return adminErr(viewErr(err))
			}
			if out.v == "json" {
				return out.json(c.OutOrStdout(), res)
			}
			printBreak(c.OutOrStdout(), args[0], res)
			return nil
		},
	}
	reg.add(c.Flags(), registryDefault, "the registry's URL")
	tokenFlag(c.Flags(), reg)
	out.add(c.Flags())
	c.Flags().StringVar(&note, "note", "", "why (an incident, a ticket); recorded with your identity")
	return c
}

// printBreak says what a break ended: every lease, each on its resource,
// and for a lock set that the whole set ended; then the lock after.
func printBreak(w io.Writer, resource string, res wire.BreakResponse) {
	if len(res.Ended) == 0 {
		fmt.Fprintf(w, "%s was not held: nothing to break\n", resource)
		printLock(w, res.Status)
		return
	}
	if b := res.Broken; b != nil && len(b.LockSet) > 0 {
		fmt.Fprintf(w, "%s is a member of %s's lock set %s: the whole set is ended, in one write\n", resource, b.Owner, strings.Join(b.LockSet, " "))
	}
	for _, e := range res.Ended {
		b := e.Holder
		fmt.Fprintf(w, "broke %s's lease %s on %s (fence %d, held since %s); its late writes are refused once the next holder writes\n",
			b.Owner, b.Lease, e.Resource, b.Fence, stamp(b.Since))
	}
	printLock(w, res.Status)
}
