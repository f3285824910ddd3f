// Proves `fencegate ls --held`: of five resources, the three held now are
// listed (text and JSON), a page of --limit held ones continues with
// --after where it stopped, and without --held all five are (the
// negative control).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/wire"
)

func TestLsHeld(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	s := startServe(t, "--data-dir", data, "--listen", "127.0.0.1:0", "--token-file", writeTokenFile(t, dir), "--unsafe-no-fsync", "--authz-open")
	c := s.client(t, filepath.Join(data, httpapi.BundleFileName))
	ctx := context.Background()
	for i, r := range []string{"hx/a", "hx/b", "hx/c", "hx/d", "hx/e"} {
		is, err := c.Acquire(ctx, wire.AcquireRequest{Resource: r, OperationID: "op", OperationClass: "lock", RequestID: "r-" + strings.ReplaceAll(r, "/", "-"), TTLMs: 60000})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 && r != "hx/e" {
			if err := c.Release(ctx, r, is.Grant.Lease); err != nil {
				t.Fatal(err)
			}
		}
	}
	ls := func(args ...string) wire.LockList {
		t.Helper()
		out, errOut, code := runCLI(append(append([]string{"ls"}, args...), "--registry", s.url, "--token", serveToken, "-o", "json")...)
		var l wire.LockList
		if code != 0 || json.Unmarshal([]byte(out), &l) != nil {
			t.Fatalf("ls %v: exit %d\n%s%s", args, code, out, errOut)
		}
		return l
	}
	names := func(l wire.LockList) []string {
		var out []string
		for _, v := range l.Locks {
			out = append(out, v.Resource)
		}
		return out
	}
	if got := names(ls("hx/")); !slices.Equal(got, []string{"hx/a", "hx/b", "hx/c", "hx/d", "hx/e"}) {
		t.Fatalf("ls hx/: %v", got)
	}
	if got := names(ls("hx/", "--held")); !slices.Equal(got, []string{"hx/b", "hx/d", "hx/e"}) {
		t.Fatalf("ls --held: %v", got)
	}
	page := ls("hx/", "--held", "--limit", "2")
	if got := names(page); !slices.Equal(got, []string{"hx/b", "hx/d"}) || page.Next != "hx/d" {
		t.Fatalf("ls --held --limit 2: %v, next %q", got, page.Next)
	}
	if got := names(ls("hx/", "--held", "--limit", "2", "--after", page.Next)); !slices.Equal(got, []string{"hx/e"}) {
		t.Fatalf("the next page: %v", got)
	}
	out, _, code := runCLI("ls", "hx/", "--held", "--registry", s.url, "--token", serveToken)
	if code != 0 || strings.Contains(out, "hx/a") || strings.Contains(out, "hx/c") || !strings.Contains(out, "hx/e") {
		t.Fatalf("ls --held as text: exit %d\n%s", code, out)
	}
}

// TestLsRowsForm proves the listing's lean form (GET
// /v1/locks?form=rows, what `ls` prints from) carries what the full form
// does: a held lock with a waiter and a free one give the same rows
// either way, the table prints each as it printed the full form (the
// reference), and an unknown form is refused.
func TestLsRowsForm(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	s := startServe(t, "--data-dir", data, "--listen", "127.0.0.1:0", "--token-file", writeTokenFile(t, dir), "--unsafe-no-fsync", "--authz-open")
	c := s.client(t, filepath.Join(data, httpapi.BundleFileName))
	ctx := context.Background()
	acq := func(r, id string) {
		t.Helper()
		if _, err := c.Acquire(ctx, wire.AcquireRequest{Resource: r, OperationID: "op", OperationClass: "lock", RequestID: id, TTLMs: 60000}); err != nil {
			t.Fatal(err)
		}
	}
	acq("rw/held", "a")
	acq("rw/free", "b")
	qctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	go c.Acquire(qctx, wire.AcquireRequest{Resource: "rw/held", OperationID: "op", OperationClass: "lock", RequestID: "w", TTLMs: 60000, WaitMs: 30000})
	defer cancel()
	time.Sleep(200 * time.Millisecond) // the waiter queues
	full, err := c.ListLocks(ctx, "rw/", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := c.ListLockRows(ctx, "rw/", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := wire.RowsOf(full)
	want.ReadAtMs = rows.ReadAtMs
	if !reflect.DeepEqual(rows, want) || len(rows.Rows) != 2 || rows.Rows[1].Waiters != 1 || rows.Rows[1].LongestSinceMs == 0 {
		t.Fatalf("rows %+v\nfrom the full form %+v", rows, want)
	}
	for _, v := range full.Locks {
		var got, ref strings.Builder
		printLockLine(&got, &v)
		printLockStatusRef(&ref, v)
		if got.String() != ref.String() {
			t.Errorf("%s printed from its row:\n%s\nfrom its status:\n%s", v.Resource, got.String(), ref.String())
		}
	}
	req, _ := http.NewRequest(http.MethodGet, s.url+"/v1/locks?form=table", nil)
	req.Header.Set("Authorization", "Bearer "+serveToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var eb wire.ErrorBody
	json.NewDecoder(resp.Body).Decode(&eb)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || eb.Code != wire.CodeBadRequest {
		t.Fatalf("form=table: %d %+v; want 400 %s", resp.StatusCode, eb, wire.CodeBadRequest)
	}
}

// printLockStatusRef is the table's line as ls printed it from the full
// form, before the lean one.
func printLockStatusRef(w io.Writer, v wire.LockStatus) {
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
