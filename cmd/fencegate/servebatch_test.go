// This file proves nothing: it holds the serve benchmarks' client options
// apart from bench_serve_test.go, so that scripts/bench-all.sh, which
// copies the bench files onto an older base revision, can stub it there
// (a base from before httpclient.WithBatching sends one request per call).
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/fencegate/fencegate/client/httpclient"
)

// serveBatching is the SDK's coalescing of concurrent calls into POST
// /v1/batch, as httpclient.Connect turns it on. FENCEGATE_BENCH_CLIENT_INFLIGHT
// sets BatchOptions.InflightMax instead of its default, to compare
// settings in one binary:
//
//	FENCEGATE_BENCH_CLIENT_INFLIGHT=1 go test ./cmd/fencegate -run '^$' -bench '^BenchmarkServeThroughput64$'
func serveBatching() []httpclient.ClientOption {
	var o httpclient.BatchOptions
	if v := os.Getenv("FENCEGATE_BENCH_CLIENT_INFLIGHT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			panic(fmt.Sprintf("FENCEGATE_BENCH_CLIENT_INFLIGHT=%q: want a count of requests, 1 or more", v))
		}
		o.InflightMax = n
	}
	return []httpclient.ClientOption{httpclient.WithBatching(o)}
}
