package httpapi

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/fencegate/fencegate/internal/keptfile"
)

// readKeptFile reads one of the files serve keeps in force (what names it
// in errors): a regular file of at most bytesMax bytes, read within
// keptfile.ReadTimeoutMs, so a FIFO, a device, a huge file or a stalled
// file system is refused rather than stalling a reload or filling memory.
func readKeptFile(path, what string, bytesMax int) ([]byte, error) {
	return readKeptFileContext(context.Background(), path, what, bytesMax)
}

// readKeptFileContext is readKeptFile, also ending when ctx does.
func readKeptFileContext(ctx context.Context, path, what string, bytesMax int) ([]byte, error) {
	b, err := keptfile.Read(ctx, path, bytesMax)
	if err != nil {
		return nil, fmt.Errorf("httpapi: %s: %w", what, err)
	}
	return b, nil
}

// watchReloads calls reload every intervalMs (0: never by itself) and
// whenever signal receives (serve sends SIGHUP there; reload is told
// which), until ctx ends: the loop the files serve keeps in force share
// (PolicyFile, GateKeysFile).
// failed gets each reason a reload failed, once until the reason changes
// (a signal always reports: it was asked for); loaded runs after each
// reload that put a new version in force.
func watchReloads(ctx context.Context, intervalMs uint64, signal <-chan os.Signal, reload func(signalled bool) (bool, error), failed func(reason string), loaded func()) {
	var tick <-chan time.Time
	if intervalMs > 0 {
		t := time.NewTicker(time.Duration(intervalMs) * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	logged := ""
	for {
		signalled := false
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-signal:
			logged, signalled = "", true
		}
		changed, err := reload(signalled)
		switch {
		case err != nil && err.Error() != logged:
			logged = err.Error()
			failed(logged)
		case err == nil:
			logged = ""
			if changed {
				loaded()
			}
		}
	}
}
