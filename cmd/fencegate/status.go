package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/wire"
)

// `fencegate status`: one lock, as any identity the resource policy lets
// see it may read it. ls.go and break.go share what is here.

func init() { register(newStatusCmd) }

// outputFlag is --output text|json.
type outputFlag struct{ v string }

func (o *outputFlag) add(fs *pflag.FlagSet) {
	fs.StringVarP(&o.v, "output", "o", "text", "text, or json (the API's answer as it came)")
}

func (o *outputFlag) check() error {
	if o.v != "text" && o.v != "json" {
		return usagef("--output %q: want text or json", o.v)
	}
	return nil
}

func (o *outputFlag) json(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newStatusCmd() *cobra.Command {
	reg := &endpointFlags{name: "registry"}
	var out outputFlag
	c := &cobra.Command{
		Use:   "status RESOURCE",
		Short: "who holds RESOURCE, since when, for how long, and who waits",
		Long: `Show a resource's lock as the registry reads it, linearizably: the holder
(identity, lease, fence, since when, time left), the fences, lock-delay,
and the queue (each waiter and how long it has waited). Any identity the
registry's resource policy lets see the resource may ask.`,
		Example: `  fencegate status invoice-batch/2026-07-19
  fencegate status jobs/nightly -o json | jq .holder`,
		Args: exactArgs("RESOURCE"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			if err := checkResourceArg(args[0]); err != nil {
				return err
			}
			rc, err := reg.registryClient()
			if err != nil {
				return err
			}
			ctx, cancel := callContext(c.Context())
			defer cancel()
			v, err := rc.LockStatus(ctx, args[0])
			if err != nil {
				return viewErr(err)
			}
			if out.v == "json" {
				return out.json(c.OutOrStdout(), v)
			}
			printLock(c.OutOrStdout(), v)
			return nil
		},
	}
	reg.add(c.Flags(), registryDefault, "the registry's URL")
	tokenFlag(c.Flags(), reg)
	out.add(c.Flags())
	return c
}

// printLock shows one lock for people.
func printLock(w io.Writer, v wire.LockStatus) {
	if v.Permits > 0 {
		printSemaphore(w, v)
		return
	}
	fmt.Fprintf(w, "resource:     %s\n", v.Resource)
	if h := v.Holder; h != nil {
		fmt.Fprintf(w, "holder:       %s\nlease:        %s (fence %d, class %s)\nheld since:   %s (%s ago)\nlease left:   %s\n",
			h.Owner, h.Lease, h.Fence, h.OperationClass, stamp(h.Since), ago(v.ReadAt, h.Since), v.Left().Round(100*time.Millisecond))
		if len(h.LockSet) > 0 {
			fmt.Fprintf(w, "lock set:     held as part of the set {%s} (every member held and lost together)\n", strings.Join(h.LockSet, ", "))
		}
	} else if len(v.Readers) == 0 {
		fmt.Fprintf(w, "holder:       none (free)\n")
	} else {
		printReaders(w, v)
	}
	if v.FreeAt != nil {
		fmt.Fprintf(w, "lock-delay:   until %s (after an expired lease)\n", stamp(*v.FreeAt))
	}
	fmt.Fprintf(w, "highestFence: %d\nfloor:        %d\nnext fence:   > %d\n", v.HighestFence, v.Floor, max(v.HighestFence, v.Floor))
	printWaiters(w, v)
}

// printReaders shows a read/write lock's readers (no writer holds it):
// each one's lease on RESOURCE/_read, its fence (the last writer's), how
// long it has held and has left; and, after a downgrade, until when no
// other reader is admitted.
func printReaders(w io.Writer, v wire.LockStatus) {
	fmt.Fprintf(w, "holder:       none (%d readers share it)\n", len(v.Readers))
	for _, h := range v.Readers {
		fmt.Fprintf(w, "  reader  %s, lease %s (fence %d), held %s, left %s\n", h.Owner, h.Lease, h.Fence,
			ago(v.ReadAt, h.Since), max(h.ExpiresAt.Sub(v.ReadAt), 0).Round(100*time.Millisecond))
	}
	if v.ReadersFrom != nil {
		fmt.Fprintf(w, "readers from: %s (after a downgrade: the write lease's statements expire)\n", stamp(*v.ReadersFrom))
	}
}

// printSemaphore shows a counting semaphore: each slot's holder and fence,
// then the queue across the slots.
func printSemaphore(w io.Writer, v wire.LockStatus) {
	held := 0
	for _, sl := range v.Slots {
		if sl.Holder != nil {
			held++
		}
	}
	fmt.Fprintf(w, "semaphore:    %s\npermits:      %d (%d held)\n", v.Resource, v.Permits, held)
	for i, sl := range v.Slots {
		switch h := sl.Holder; {
		case h != nil:
			fmt.Fprintf(w, "  slot %d  %s: %s, lease %s (fence %d), held %s, left %s\n", i, sl.Resource, h.Owner, h.Lease, h.Fence,
				ago(sl.ReadAt, h.Since), sl.Left().Round(100*time.Millisecond))
		case sl.FreeAt != nil:
			fmt.Fprintf(w, "  slot %d  %s: free at %s (lock-delay after an expired lease; highestFence %d)\n", i, sl.Resource, stamp(*sl.FreeAt), sl.HighestFence)
		default:
			fmt.Fprintf(w, "  slot %d  %s: free (highestFence %d)\n", i, sl.Resource, sl.HighestFence)
		}
	}
	printWaiters(w, v)
}

// printWaiters lists a lock's queue, head first; for a read/write lock
// (readers hold it, or a reader waits) each waiter's mode, and whether a
// queued writer keeps new readers out.
func printWaiters(w io.Writer, v wire.LockStatus) {
	rw := len(v.Readers) > 0 || slices.ContainsFunc(v.Waiters, func(wt wire.LockWaiter) bool { return wt.Read })
	fmt.Fprintf(w, "waiters:      %d\n", len(v.Waiters))
	if len(v.Readers) > 0 && slices.ContainsFunc(v.Waiters, func(wt wire.LockWaiter) bool { return !wt.Read }) {
		fmt.Fprintf(w, "              a writer is queued: new readers wait behind it (writer preference)\n")
	}
	for i, wt := range v.Waiters {
		mode := ""
		if rw {
			mode = map[bool]string{false: ", a writer", true: ", a reader"}[wt.Read]
		}
		since := "since an unrecorded time"
		if !wt.Since.IsZero() {
			since = "waiting " + ago(v.ReadAt, wt.Since) + " (since " + stamp(wt.Since) + ")"
		}
		set := ""
		if len(wt.LockSet) > 0 {
			set = ", for the lock set {" + strings.Join(wt.LockSet, ", ") + "}"
		}
		fmt.Fprintf(w, "  %d. %s%s, class %s, %s%s\n", i+1, wt.Owner, mode, wt.OperationClass, since, set)
	}
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 MST") }

func ago(now, then time.Time) string {
	return max(now.Sub(then), 0).Round(100 * time.Millisecond).String()
}

// viewErr says what to do about a refusal of a lock view.
func viewErr(err error) error {
	var api *httpclient.APIError
	if errors.As(err, &api) && api.Code == wire.CodeForbiddenResource {
		return fmt.Errorf("%w: the registry's resource policy (serve --authz-policy) does not let you do this to this resource", err)
	}
	return adminErr(err)
}
