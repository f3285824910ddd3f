//go:build unix

// Proves Read takes regular files only, refusing a FIFO, a device and a
// directory at once with an error naming the path; bounds the bytes
// (a file one byte over the limit, and a 256 MiB one, are refused
// without being read); and returns within its time limit when the file
// system does not answer, shown with a plain blocking open of a FIFO,
// which is also the negative control: without the non-blocking open and
// the regular-file check, a FIFO stalls the reader.
package keptfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

const limit = 4096

func TestReadsARegularFileUpToTheLimit(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, limit - 1, limit} {
		p := filepath.Join(dir, "f")
		want := []byte(strings.Repeat("k", n))
		if err := os.WriteFile(p, want, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Read(context.Background(), p, limit)
		if err != nil || string(got) != string(want) {
			t.Fatalf("%d bytes: got %d bytes, %v", n, len(got), err)
		}
	}
	// A symbolic link to a regular file (a Kubernetes secret's mount) is
	// followed.
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "f"), link); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(context.Background(), link, limit); err != nil {
		t.Fatalf("symlink to a regular file: %v", err)
	}
}

func TestRefusesAFileAboveTheLimitWithoutReadingIt(t *testing.T) {
	dir := t.TempDir()
	over := filepath.Join(dir, "over")
	if err := os.WriteFile(over, make([]byte, limit+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(context.Background(), over, limit); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), over) {
		t.Fatalf("limit+1 bytes: %v, want ErrTooLarge naming the path", err)
	}
	// 256 MiB (sparse): refused by its size, so the read allocates
	// nothing near it.
	huge := filepath.Join(dir, "huge")
	fh, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(256 << 20); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Read(context.Background(), huge, limit)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "268435456 bytes, limit 4096") {
		t.Fatalf("256 MiB: %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("refusing 256 MiB allocated %d bytes", grew)
	}
}

func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, kind string }{
		{fifo, "FIFO"}, {"/dev/zero", "character device"}, {"/dev/null", "character device"}, {dir, "directory"},
	} {
		start := time.Now()
		_, err := Read(context.Background(), c.path, limit)
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.kind) {
			t.Errorf("%s: %v, want ErrNotRegular naming the path and %q", c.path, err, c.kind)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: refused after %v, want at once", c.path, took)
		}
	}
	if _, err := Read(context.Background(), filepath.Join(dir, "absent"), limit); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: %v", err)
	}
}

// TestTimesOutWhenTheFileSystemDoesNotAnswer reads a FIFO with a plain
// blocking open (the negative control: what os.ReadFile does), which
// waits for a writer forever: read gives up at its limit.
func TestTimesOutWhenTheFileSystemDoesNotAnswer(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // let the abandoned open finish
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	const timeoutMs = 100
	start := time.Now()
	_, _, err := read(context.Background(), fifo, limit, timeoutMs, os.Open)
	took := time.Since(start)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), fifo) {
		t.Fatalf("blocking open of a FIFO: %v, want ErrTimeout naming the path", err)
	}
	if took < timeoutMs*time.Millisecond || took > 5*time.Second {
		t.Fatalf("gave up after %v, want about %d ms", took, timeoutMs)
	}
	// A caller's context that ends first ends the read too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := read(ctx, fifo, limit, timeoutMs, os.Open); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// TestUnchangedSeesAReplacedOrRewrittenFile: the status ReadInfo took
// still matches an untouched file, and no longer matches once the file is
// rewritten with another size or time, or replaced by a rename (another
// inode); a rewrite keeping size, time and inode is the one it cannot
// see (the negative control: why a reload on SIGHUP reads the file).
func TestUnchangedSeesAReplacedOrRewrittenFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k")
	write := func(s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("one")
	_, info, err := ReadInfo(context.Background(), p, limit)
	if err != nil || !Unchanged(p, info) {
		t.Fatalf("untouched: %v", err)
	}
	write("three") // another size
	if Unchanged(p, info) {
		t.Fatal("a rewrite of another size is unchanged")
	}
	write("one")
	_, info, _ = ReadInfo(context.Background(), p, limit)
	other := filepath.Join(dir, "k.new")
	if err := os.WriteFile(other, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(other, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, p); err != nil {
		t.Fatal(err)
	}
	if Unchanged(p, info) {
		t.Fatal("a file renamed over it (same size and time) is unchanged")
	}
	_, info, _ = ReadInfo(context.Background(), p, limit)
	write("owe") // same size, same inode: put the time back
	if err := os.Chtimes(p, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	if !Unchanged(p, info) {
		t.Fatal("negative control: a rewrite keeping size, time and inode was seen by status alone")
	}
}
