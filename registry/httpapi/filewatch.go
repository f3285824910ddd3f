package httpapi

import (
	"context"
	"os"
	"time"
)

// watchReloads calls reload every intervalMs (0: never by itself) and
// whenever signal receives (serve sends SIGHUP there), until ctx ends: the
// loop the files serve keeps in force share (PolicyFile, GateKeysFile).
// failed gets each reason a reload failed, once until the reason changes
// (a signal always reports: it was asked for); loaded runs after each
// reload that put a new version in force.
func watchReloads(ctx context.Context, intervalMs uint64, signal <-chan os.Signal, reload func() (bool, error), failed func(reason string), loaded func()) {
	var tick <-chan time.Time
	if intervalMs > 0 {
		t := time.NewTicker(time.Duration(intervalMs) * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	logged := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-signal:
			logged = ""
		}
		changed, err := reload()
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
