//go:build !unix

package keptfile

import "os"

// openNoBlock opens path for reading. Without O_NONBLOCK an open that
// blocks is bounded by Read's time limit alone.
func openNoBlock(path string) (*os.File, error) { return os.Open(path) }
