// This file proves serve --release-early end to end: each release is
// answered before its commit, yet the next acquire through the same serve
// — sent while that commit may be in flight — is never refused as busy
// and its fence is the next. (Without the registry's wait for a release
// in flight after a failed compare, it is refused: checked by hand.)
package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/wire"
)

func TestServeReleaseEarly(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	args := []string{"--data-dir", data, "--listen", "127.0.0.1:0", "--token-file", writeTokenFile(t, dir), "--unsafe-no-fsync",
		"--authz-open", "--release-early"}
	bundle := filepath.Join(data, httpapi.BundleFileName)
	ctx := context.Background()
	req := func(i int) wire.AcquireRequest {
		return wire.AcquireRequest{Resource: "early/1", OperationID: fmt.Sprint("op-", i), OperationClass: "settle", RequestID: fmt.Sprint("req-", i)}
	}

	s1 := startServe(t, args...)
	c := s1.client(t, bundle)
	last, err := c.Acquire(ctx, req(0))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 20; i++ {
		if err := c.Release(ctx, "early/1", last.Grant.Lease); err != nil {
			t.Fatal(err)
		}
		next, err := c.Acquire(ctx, req(i))
		if err != nil {
			t.Fatalf("acquire %d right after a release answered early: %v", i, err)
		}
		if next.Grant.FenceToken != last.Grant.FenceToken+1 {
			t.Fatalf("acquire %d: fence %d after %d", i, next.Grant.FenceToken, last.Grant.FenceToken)
		}
		last = next
	}
	if code := s1.stop(); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, s1.stderr)
	}
}
