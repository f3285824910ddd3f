package zkstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/testkit/zktest"
	"github.com/fencegate/fencegate/wire"
)

// fullDiskBytes is the test's file system for ZooKeeper's data: 3 MiB,
// all but about 600 KiB taken by a filler file.
const (
	fullDiskBytes   = 3 << 20
	fullDiskFillKiB = 2400
)

// TestFullDiskStopsZooKeeperAndNothingIsLost is what the registry does
// when ZooKeeper's disk fills (a tmpfs of 3 MiB, mounted for the test:
// it needs root, and skips without). ZooKeeper 3.8 does not refuse
// writes on a full disk: its log writer fails and the server exits
// ("Severe unrecoverable error", JVM exit 1), so the registry answers
// every call UNAVAILABLE (the client cannot tell a full disk from a
// server that is down: ZooKeeper's log says which), status included.
// Space freed, nothing happens until the server is started again (an
// operator's, or systemd's, restart); then grants resume on the same
// registry by themselves, every grant made before is still held, and
// the acquire whose outcome was unknown, retried with its request ID,
// is answered once: as granted with its fence, or granted now.
func TestFullDiskStopsZooKeeperAndNothingIsLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", fullDiskBytes), "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("SKIPPING: a full disk needs a small file system, and mounting a tmpfs failed (root?): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	srv := zktest.Start(t, zktest.Options{DataDir: filepath.Join(mnt, "zk"), Properties: []string{"-Dzookeeper.preAllocSize=16", "-Dzookeeper.snapCount=100000"}})
	filler := filepath.Join(mnt, "filler")
	if out, err := exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=1k", fmt.Sprintf("count=%d", fullDiskFillKiB)).CombinedOutput(); err != nil {
		t.Fatalf("filler: %v %s", err, out)
	}
	st := openStore(t, ctx, []string{srv.Addr})
	reg := storetest.NewRegistry(t, st, nil)
	acq := func(i int) (wire.Issued, error) {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		return reg.Acquire(cctx, "w", wire.AcquireRequest{Resource: fmt.Sprintf("r/%05d", i), OperationID: "op", OperationClass: "test", RequestID: fmt.Sprintf("q%05d", i), TTLMs: 600_000})
	}
	fences := map[int]uint64{}
	var full error
	n := 0
	for ; n < 20_000; n++ {
		is, err := acq(n)
		if err != nil {
			full = err
			break
		}
		fences[n] = is.Grant.FenceToken
	}
	t.Logf("the disk filled after %d grants: %v", n, full)
	if !errors.Is(full, wire.ErrUnavailable) || n < 100 {
		t.Fatalf("after %d grants: %v; want UNAVAILABLE once the disk is full", n, full)
	}
	if _, err := reg.LockStatus(ctx, "r/00001"); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("status with ZooKeeper down: %v; want UNAVAILABLE", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if _, err := acq(n + 1); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("space freed, server not restarted: %v; want UNAVAILABLE (ZooKeeper exited)", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, err = acq(n + 1); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("after the restart, grants did not resume: %v", err)
	}
	retried, err := acq(n)
	if err != nil {
		t.Fatalf("the unknown acquire, retried: %v", err)
	}
	t.Logf("the acquire whose outcome was unknown, retried: fence %d", retried.Grant.FenceToken)
	for i, f := range fences {
		v, err := reg.LockStatus(ctx, fmt.Sprintf("r/%05d", i))
		if err != nil || v.Holder == nil || v.Holder.Fence != f {
			t.Fatalf("r/%05d after the restart: %+v, %v; want held at fence %d", i, v, err, f)
		}
	}
}
