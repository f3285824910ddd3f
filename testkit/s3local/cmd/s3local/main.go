// Command s3local serves an in-memory S3-compatible store on a loopback
// port (testkit/s3local: gofakes3, conditional writes honoured) until it
// is interrupted. It is for development and tests, never for data:
// `fencegate demo --resource s3 --s3-endpoint URL` and objgate's tests
// can run against it. The fencegate binary does not link it.
//
//	go run ./testkit/s3local/cmd/s3local
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/fencegate/fencegate/testkit/s3local"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := s3local.Start(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "s3local:", err)
		os.Exit(1)
	}
	fmt.Printf("s3local: listening on %s (in memory; interrupt to stop)\n", s.URL)
	<-ctx.Done()
}
