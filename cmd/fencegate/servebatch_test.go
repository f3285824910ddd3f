// This file proves nothing: it holds the serve benchmarks' client options
// apart from bench_serve_test.go, so that scripts/bench-all.sh, which
// copies the bench files onto an older base revision, can stub it there
// (a base from before httpclient.WithBatching sends one request per call).
package main

import "github.com/fencegate/fencegate/client/httpclient"

// serveBatching is the SDK's coalescing of concurrent calls into POST
// /v1/batch, as httpclient.Connect turns it on.
func serveBatching() []httpclient.ClientOption {
	return []httpclient.ClientOption{httpclient.WithBatching(httpclient.BatchOptions{})}
}
