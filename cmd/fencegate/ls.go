package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

// `fencegate ls`: the locks under a prefix that the caller may see.

func init() { register(newLsCmd) }

// Page sizes of `ls`: --limit asks at most lsPageMax a page; --all
// follows pages of lsAllPage, the most the registry answers, so a walk of
// 100,000 locks is 100 requests, not 1,000 (issue 49).
const (
	lsPageMax = 100
	lsAllPage = registry.ListLimitMax
)

func newLsCmd() *cobra.Command {
	reg := &endpointFlags{name: "registry"}
	var out outputFlag
	var after string
	var limit int
	var all, held bool
	c := &cobra.Command{
		Use:   "ls [PREFIX]",
		Short: "list locks (under PREFIX): holder, held for, waiters",
		Long: `List the locks of the resources under PREFIX (all, without one) that the
registry's resource policy lets you see, in name order, a page at a time
(--limit, default and most 100; --after continues after a resource;
--all follows every page, asking 1,000 at a time). A resource is listed once it was acquired or
given a floor; --held lists only those held now (by the registry's clock
at the read), in pages of --limit held ones, with -o json too.`,
		Example: `  fencegate ls jobs/
  fencegate ls --held                      # what is locked right now
  fencegate ls --held --all -o json | jq -r '.locks[].resource'`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("want at most one PREFIX")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			if limit < 1 || limit > lsPageMax {
				return usagef("--limit %d: want 1 to %d", limit, lsPageMax)
			}
			prefix := ""
			if len(args) == 1 {
				prefix = args[0]
			}
			rc, err := reg.registryClient()
			if err != nil {
				return err
			}
			list, err := listLocks(c, rc, lsQuery{prefix: prefix, after: after, limit: limit, all: all, held: held})
			if err != nil {
				return viewErr(err)
			}
			if out.v == "json" {
				return out.json(c.OutOrStdout(), list)
			}
			printLocks(c.OutOrStdout(), list)
			return nil
		},
	}
	reg.add(c.Flags(), registryDefault, "the registry's URL")
	tokenFlag(c.Flags(), reg)
	out.add(c.Flags())
	c.Flags().StringVar(&after, "after", "", "list resources after this one (the last of the previous page)")
	c.Flags().IntVar(&limit, "limit", lsPageMax, "resources per page, 1 to 100")
	c.Flags().BoolVar(&all, "all", false, "follow every page")
	c.Flags().BoolVar(&held, "held", false, "only the locks held now")
	return c
}

// lsQuery is what ls lists.
type lsQuery struct {
	prefix, after string
	limit         int
	all, held     bool
}

// listLocks reads one page, or every page with all. With held it keeps
// the held locks only, reading pages until it has limit of them (or
// every page with all); Next then continues after the last one kept.
func listLocks(c *cobra.Command, rc *httpclient.Client, q lsQuery) (wire.LockList, error) {
	out := wire.LockList{Locks: []wire.LockStatus{}}
	after := q.after
	size := q.limit
	if q.all {
		size = lsAllPage
	}
	for {
		ctx, cancel := callContext(c.Context())
		page, err := rc.ListLocks(ctx, q.prefix, after, size)
		cancel()
		if err != nil {
			return out, err
		}
		out.Next = page.Next
		for _, v := range page.Locks {
			if q.held && v.Holder == nil {
				continue
			}
			out.Locks = append(out.Locks, v)
			if q.held && !q.all && len(out.Locks) == q.limit {
				out.Next = v.Resource
				if v.Resource == page.Locks[len(page.Locks)-1].Resource {
					out.Next = page.Next // the page's last: whatever follows it
				}
				return out, nil
			}
		}
		if page.Next == "" || !q.all && !q.held {
			return out, nil
		}
		after = page.Next
	}
}

// printLocks is one line a lock.
func printLocks(w io.Writer, l wire.LockList) {
	fmt.Fprintf(w, "%-40s %-24s %6s %12s %10s %s\n", "RESOURCE", "HOLDER", "FENCE", "HELD FOR", "LEFT", "WAITERS")
	for _, v := range l.Locks {
		holder, held, left := "-", "-", "-"
		if h := v.Holder; h != nil {
			holder, held, left = h.Owner, ago(v.ReadAt, h.Since), v.Left().Round(100*time.Millisecond).String()
		}
		waiters := fmt.Sprint(len(v.Waiters))
		if len(v.Waiters) > 0 && !v.Waiters[0].Since.IsZero() {
			waiters += " (longest " + ago(v.ReadAt, v.Waiters[0].Since) + ")"
		}
		fmt.Fprintf(w, "%-40s %-24s %6d %12s %10s %s\n", v.Resource, holder, v.HighestFence, held, left, waiters)
	}
	if l.Next != "" {
		fmt.Fprintf(w, "… more: fencegate ls --after %s (or --all)\n", l.Next)
	}
}
