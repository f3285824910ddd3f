// Command lockonly runs a job under a lock, as etcd's Mutex would: one
// process at a time, served in the order they came, each knowing the
// moment its lock is no longer certain (lease.Ctx()). It writes nowhere a
// gate protects, so a process that pauses past its lease could still
// overlap its successor; owndb shows the write that cannot.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/wire"
)

func main() {
	ctx := context.Background()
	w, err := httpclient.Connect(ctx, "http://127.0.0.1:7420", httpclient.WithBearerToken("fencegate-dev-token"))
	if err != nil {
		log.Fatal(err)
	}
	lease, err := w.Lock(ctx, wire.AcquireRequest{Resource: "jobs/nightly-report", TTLMs: 10_000})
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(ctx)
	fmt.Printf("start fence=%d at=%d\n", lease.Fence(), time.Now().UnixMilli())
	select {
	case <-time.After(time.Second): // the job
	case <-lease.Ctx().Done():
		log.Fatal("the lock is no longer certain: stop")
	}
	fmt.Printf("done fence=%d at=%d\n", lease.Fence(), time.Now().UnixMilli())
}
