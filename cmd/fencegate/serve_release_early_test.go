// This file gives the serve benchmarks serve's flag for releases answered
// early (--release-early). It is not a bench*_test.go file:
// scripts/bench-all.sh copies those into a base revision, which gets a
// stub of serveReleaseArgs instead (no flag: a durable release, what the
// base had).
package main

// serveReleaseArgs are the flags the serve benchmarks start serve with
// for its release.
func serveReleaseArgs() []string { return []string{"--release-early"} }
