// Command election campaigns to lead "election/scheduler", leads for a
// while, and resigns. The term is the grant's fence: a leader deposed
// while paused still believes it leads, and a gate refuses its writes by
// their lower term (cmd/fencegate/elect_test.go plays that story).
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/httpclient"
)

func main() {
	ctx := context.Background()
	w, err := httpclient.Connect(ctx, "http://127.0.0.1:7420", httpclient.WithBearerToken("fencegate-dev-token"))
	if err != nil {
		log.Fatal(err)
	}
	e, err := client.NewElection(w.Session, "election/scheduler")
	if err != nil {
		log.Fatal(err)
	}
	lead, err := e.Campaign(ctx, client.Campaign{TTL: 10 * time.Second}) // waits its turn
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("leading term=%d at=%d\n", lead.Fence(), time.Now().UnixMilli())
	select {
	case <-time.After(time.Second): // the leader's work; lead.Ctx() ends if leadership is lost
	case <-lead.Ctx().Done():
		log.Fatal("no longer certain to lead: stop")
	}
	if l, err := e.Leader(ctx); err == nil {
		fmt.Printf("leader %s term=%d\n", l.Identity, l.Term)
	}
	fmt.Printf("resigning term=%d at=%d\n", lead.Fence(), time.Now().UnixMilli())
	if err := lead.Release(ctx); err != nil {
		log.Fatal(err)
	}
}
