package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
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
at the read), in pages of --limit held ones, with -o json too. A
read/write lock its readers hold shows "(N readers)" and a line for each
reader (lease, fence, time held and left); its queue names each waiter's
mode (writer, reader), and a line says when a queued writer keeps new
readers out (writer preference).`,
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
			q := lsQuery{prefix: prefix, after: after, limit: limit, all: all, held: held}
			if out.v == "json" {
				list := wire.LockList{Locks: []wire.LockStatus{}}
				list.Next, err = listLocks(c.Context(), q, fullPages(rc), func(p *fullPage, i int) { list.Locks = append(list.Locks, p.Locks[i]) })
				if err != nil {
					return viewErr(err)
				}
				return out.json(c.OutOrStdout(), list)
			}
			w := bufio.NewWriter(c.OutOrStdout())
			printLocksHeader(w)
			next, err := listLocks(c.Context(), q, rowPages(rc), func(p *rowsPage, i int) { printRow(w, p.ReadAt(), &p.Rows[i]) })
			if errors.Is(err, errNoRows) { // a registry from before the lean form
				next, err = listLocks(c.Context(), q, fullPages(rc), func(p *fullPage, i int) { printLockLine(w, &p.Locks[i]) })
			}
			if err == nil && next != "" {
				fmt.Fprintf(w, "… more: fencegate ls --after %s (or --all)\n", next)
			}
			if ferr := w.Flush(); err == nil {
				err = ferr
			}
			if err != nil {
				return viewErr(err)
			}
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

// lsPagesAhead is how many pages ls reads and decodes ahead of the one
// it prints: the next page is asked for as soon as one arrives.
const lsPagesAhead = 2

// lsPage is a page as ls walks it: a LockList (-o json) or LockRows
// (the table).
type lsPage interface {
	next() string
	len() int
	held(i int) bool
	resource(i int) string
}

type fullPage wire.LockList

func (p *fullPage) next() string          { return p.Next }
func (p *fullPage) len() int              { return len(p.Locks) }
func (p *fullPage) held(i int) bool       { return p.Locks[i].Holder != nil || len(p.Locks[i].Readers) > 0 }
func (p *fullPage) resource(i int) string { return p.Locks[i].Resource }

type rowsPage wire.LockRows

func (p *rowsPage) next() string          { return p.Next }
func (p *rowsPage) len() int              { return len(p.Rows) }
func (p *rowsPage) held(i int) bool       { return p.Rows[i].Owner != "" || len(p.Rows[i].Readers) > 0 }
func (p *rowsPage) resource(i int) string { return p.Rows[i].Resource }
func (p *rowsPage) ReadAt() time.Time     { return (*wire.LockRows)(p).ReadAt() }

// pageFetch reads the page under prefix after after, at most size.
type pageFetch[P lsPage] func(ctx context.Context, prefix, after string, size int) (P, error)

func fullPages(rc *httpclient.Client) pageFetch[*fullPage] {
	return func(ctx context.Context, prefix, after string, size int) (*fullPage, error) {
		l, err := rc.ListLocks(ctx, prefix, after, size)
		return (*fullPage)(&l), err
	}
}

// errNoRows: the registry does not answer the lean form.
var errNoRows = errors.New("the registry lists no rows")

// rowPages reads the lean form; a refusal of the walk's first page as a
// bad request is errNoRows (readPages calls it from one goroutine).
func rowPages(rc *httpclient.Client) pageFetch[*rowsPage] {
	first := true
	return func(ctx context.Context, prefix, after string, size int) (*rowsPage, error) {
		l, err := rc.ListLockRows(ctx, prefix, after, size)
		var api *httpclient.APIError
		if errors.As(err, &api) && api.Code == wire.CodeBadRequest && first {
			err = fmt.Errorf("%w: %w", errNoRows, err)
		}
		first = false
		return (*rowsPage)(&l), err
	}
}

// listLocks hands every lock of q to emit, in name order, and returns
// the Next of what it listed: one page, or every page with all. With
// held it keeps the held locks only, reading pages until it has limit
// of them (or every page with all); Next then continues after the last
// one kept. Pages are read ahead of emit (readPages), at most
// lsPagesAhead of them.
func listLocks[P lsPage](ctx context.Context, q lsQuery, fetch pageFetch[P], emit func(p P, i int)) (string, error) {
	ctx, stop := context.WithCancel(ctx)
	defer stop() // a walk that ends early (held, limit) ends the reader
	size := q.limit
	if q.all {
		size = lsAllPage
	}
	next, kept := "", 0
	for p := range readPages(ctx, q, size, fetch) {
		if p.err != nil {
			return next, p.err
		}
		next = p.page.next()
		for i := range p.page.len() {
			if q.held && !p.page.held(i) {
				continue
			}
			emit(p.page, i)
			if kept++; q.held && !q.all && kept == q.limit {
				if i == p.page.len()-1 {
					return p.page.next(), nil // the page's last: whatever follows it
				}
				return p.page.resource(i), nil
			}
		}
	}
	return next, nil
}

// pageRead is one page as read, or the error that ended the walk.
type pageRead[P lsPage] struct {
	page P
	err  error
}

// readPages reads q's pages of size from q.after, each asked as soon
// as the one before it arrived, and hands them over in order, at most
// lsPagesAhead waiting: one page, or every page with all or held. The
// channel closes after the last page or the first error, or once ctx
// ends.
func readPages[P lsPage](ctx context.Context, q lsQuery, size int, fetch pageFetch[P]) <-chan pageRead[P] {
	ch := make(chan pageRead[P], lsPagesAhead)
	go func() {
		defer close(ch)
		after := q.after
		for {
			cctx, cancel := callContext(ctx)
			p, err := fetch(cctx, q.prefix, after, size)
			cancel()
			select {
			case ch <- pageRead[P]{page: p, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil || p.next() == "" || !q.all && !q.held {
				return
			}
			after = p.next()
		}
	}()
	return ch
}

// printLocksHeader heads the lines of printLockLine and printRow.
func printLocksHeader(w io.Writer) {
	fmt.Fprintf(w, "%-40s %-24s %6s %12s %10s %s\n", "RESOURCE", "HOLDER", "FENCE", "HELD FOR", "LEFT", "WAITERS")
}

// printLockLine is one line a lock.
func printLockLine(w io.Writer, v *wire.LockStatus) {
	r := wire.RowsOf(wire.LockList{Locks: []wire.LockStatus{*v}})
	printRow(w, v.ReadAt, &r.Rows[0])
}

// printRow is one line a lock, read at readAt; a read/write lock's
// readers follow it, a line each, and whether a queued writer holds new
// readers back.
func printRow(w io.Writer, readAt time.Time, r *wire.LockRow) {
	holder, held, left := "-", "-", "-"
	if r.Owner != "" {
		holder, held = r.Owner, ago(readAt, time.UnixMilli(r.SinceMs))
		left = max(time.UnixMilli(r.ExpiresAtMs).Sub(readAt), 0).Round(100 * time.Millisecond).String()
	}
	if n := len(r.Readers); n > 0 {
		holder = fmt.Sprintf("(%d %s)", n, plural(n, "reader", "readers")) // each on a line of its own below
	}
	if r.Permits > 0 {
		holder = fmt.Sprintf("(semaphore, %d permits)", r.Permits) // its slots are the rows NAME/_slot.I
	}
	if len(r.LockSet) > 0 {
		holder += fmt.Sprintf(" (set of %d)", len(r.LockSet)) // the members are rows of their own
	}
	waiters := strconv.Itoa(r.Waiters)
	if r.LongestSinceMs != 0 {
		waiters += " (longest " + ago(readAt, time.UnixMilli(r.LongestSinceMs)) + ")"
	}
	if r.Modes != "" {
		waiters += ": " + modesText(r.Modes)
	}
	fmt.Fprintf(w, "%-40s %-24s %6d %12s %10s %s\n", r.Resource, holder, r.HighestFence, held, left, waiters)
	for _, h := range r.Readers {
		fmt.Fprintf(w, "  reader %s, lease %s (fence %d), held %s, left %s\n", h.Owner, h.Lease, h.Fence,
			ago(readAt, time.UnixMilli(h.SinceMs)), max(time.UnixMilli(h.ExpiresAtMs).Sub(readAt), 0).Round(100*time.Millisecond))
	}
	if len(r.Readers) > 0 && strings.IndexByte(r.Modes, wire.ModeLetterWrite) >= 0 {
		fmt.Fprintf(w, "  a writer is queued: new readers wait behind it (writer preference)\n")
	}
}

// modesShownMax is how many waiters' modes a row of ls names.
const modesShownMax = 8

// modesText names a queue's modes (LockRow.Modes), head first.
func modesText(modes string) string {
	var names []string
	for i := range min(len(modes), modesShownMax) {
		names = append(names, map[byte]string{wire.ModeLetterWrite: "writer", wire.ModeLetterRead: "reader"}[modes[i]])
	}
	if n := len(modes) - modesShownMax; n > 0 {
		names = append(names, fmt.Sprintf("… %d more", n))
	}
	return strings.Join(names, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
