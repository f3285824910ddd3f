// Proves `fencegate ls --held`: of five resources, the three held now are
// listed (text and JSON), a page of --limit held ones continues with
// --after where it stopped, and without --held all five are (the
// negative control).
package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
