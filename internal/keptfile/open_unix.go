//go:build unix

package keptfile

import (
	"os"
	"syscall"
)

// openNoBlock opens path for reading without waiting for a FIFO's writer
// (O_NONBLOCK; a regular file's reads ignore it), so the status check
// comes before anything can block.
func openNoBlock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
