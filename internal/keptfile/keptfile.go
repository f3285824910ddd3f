// Package keptfile reads the small files a process keeps in force (key
// files, serve's gate-keys file and resource policy): regular files only,
// at most a named number of bytes, within a time limit. A FIFO, a device,
// a directory, a huge file or a stalled file system then costs the reader
// one refusal naming the path, never a stall or its memory.
package keptfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// ReadTimeoutMs bounds one Read, 5 s: a regular file of a few KiB on a
// healthy file system reads in microseconds, so only a stalled one (a hung
// network mount) reaches it.
const ReadTimeoutMs = 5000

// Errors a Read wraps, for errors.Is.
var (
	// ErrNotRegular: the path names a FIFO, device, socket or directory.
	ErrNotRegular = errors.New("keptfile: not a regular file")
	// ErrTooLarge: the file holds more than the bytes allowed.
	ErrTooLarge = errors.New("keptfile: file too large")
	// ErrTimeout: the read did not end within ReadTimeoutMs (or ctx's
	// deadline, when sooner).
	ErrTimeout = errors.New("keptfile: read timed out")
)

// Read returns the contents of the regular file at path (a symbolic link
// is followed), which must hold at most bytesMax bytes. It never blocks
// on opening a FIFO, never reads more than bytesMax+1 bytes, and returns
// within ReadTimeoutMs or when ctx ends, whichever is first; a read
// abandoned then finishes in the background and its result is dropped.
// Every error names path.
func Read(ctx context.Context, path string, bytesMax int) ([]byte, error) {
	b, _, err := read(ctx, path, bytesMax, ReadTimeoutMs, openNoBlock)
	return b, err
}

// ReadInfo is Read, also returning the file's status as taken on the
// open file before it was read: a later os.Stat of path that differs
// from it (os.SameFile, size, modification time) means the file may have
// changed since.
func ReadInfo(ctx context.Context, path string, bytesMax int) ([]byte, os.FileInfo, error) {
	return read(ctx, path, bytesMax, ReadTimeoutMs, openNoBlock)
}

// Unchanged reports whether path's status now matches info (ReadInfo's):
// the same file (device and inode, so a file swapped in by a rename or a
// symbolic link is a change), size and modification time. It is a cheap
// check for polling, not a proof: a rewrite that keeps all three is seen
// only by reading the file again.
func Unchanged(path string, info os.FileInfo) bool {
	st, err := os.Stat(path)
	return err == nil && info != nil && os.SameFile(st, info) && st.Size() == info.Size() && st.ModTime().Equal(info.ModTime())
}

type result struct {
	b    []byte
	info os.FileInfo
	err  error
}

// read is Read with the time limit and the open call given, so a test can
// show the limit with an open that blocks.
func read(ctx context.Context, path string, bytesMax int, timeoutMs int64, open func(string) (*os.File, error)) ([]byte, os.FileInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(timeoutMs)*time.Millisecond)
	defer cancel()
	done := make(chan result, 1) // buffered: an abandoned read does not leak a blocked send
	go func() {
		b, info, err := readRegular(path, bytesMax, open)
		done <- result{b, info, err}
	}()
	select {
	case r := <-done:
		return r.b, r.info, r.err
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, nil, fmt.Errorf("%w: %s: no answer from the file system within %d ms", ErrTimeout, path, timeoutMs)
		}
		return nil, nil, fmt.Errorf("keptfile: %s: %w", path, ctx.Err())
	}
}

// readRegular opens path, refuses anything but a regular file of at most
// bytesMax bytes (by the open file's own status, so no swap between a
// check and the open), and reads at most bytesMax+1 bytes of it: a file
// that grew after the status was taken is refused too.
func readRegular(path string, bytesMax int, open func(string) (*os.File, error)) ([]byte, os.FileInfo, error) {
	fh, err := open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("keptfile: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("keptfile: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%w: %s is a %s; give the path of a regular file", ErrNotRegular, path, kind(st.Mode()))
	}
	if st.Size() > int64(bytesMax) {
		return nil, nil, fmt.Errorf("%w: %s holds %d bytes, limit %d", ErrTooLarge, path, st.Size(), bytesMax)
	}
	b, err := io.ReadAll(io.LimitReader(fh, int64(bytesMax)+1))
	if err != nil {
		return nil, nil, fmt.Errorf("keptfile: %s: %w", path, err)
	}
	if len(b) > bytesMax {
		return nil, nil, fmt.Errorf("%w: %s holds more than %d bytes", ErrTooLarge, path, bytesMax)
	}
	return b, st, nil
}

// kind names what a non-regular file is, for the error.
func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "FIFO (named pipe)"
	case m&os.ModeCharDevice != 0:
		return "character device"
	case m&os.ModeDevice != 0:
		return "block device"
	case m&os.ModeSocket != 0:
		return "socket"
	}
	return "special file (" + m.Type().String() + ")"
}
