// This file proves the embedded etcd starts on kernel-picked loopback ports,
// serves reads and writes, and keeps them across a restart on one data dir.
package etcdstore

import (
	"context"
	"testing"
)

func TestEmbeddedRestartKeepsData(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := StartEmbedded(ctx, dir, EmbeddedOptions{UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.Client()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	e.Close()

	e, err = StartEmbedded(ctx, dir, EmbeddedOptions{UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c, err = e.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("after restart: %v", resp.Kvs)
	}
}
