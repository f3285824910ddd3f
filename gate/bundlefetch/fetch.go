// Package bundlefetch keeps a gate's trust bundle current: it polls a
// registry's GET /v1/trust-bundle and installs a newer bundle in the
// gate's grant.Verifier only if the bundle in force accepts it
// (grant.Bundle.VerifyUpdate: signed by a key it trusts, newer, undoing
// nothing). On any failure — the registry unreachable, an unsigned,
// forged, older or regressing bundle — it keeps the last good bundle and
// reports why. Each accepted bundle is also written to a file, so a
// restart starts from the last good one rather than the first.
package bundlefetch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/fencegate/fencegate/grant"
)

// IntervalDefault is how often Run polls when Fetcher.Interval is zero,
// 30s: a rotation's overlap is minutes to hours, so a gate learns a new
// key long before the registry signs with it.
const IntervalDefault = 30 * time.Second

// Source returns the published bundle; httpclient.Client.TrustBundle is one.
type Source func(ctx context.Context) (grant.SignedBundle, error)

// Fetcher polls Source and updates Verifier.
type Fetcher struct {
	Source   Source          // required
	Verifier *grant.Verifier // required: the gate's verifier (its bundle is the one in force)
	// Path, if set, receives each accepted bundle (atomically, mode 0644);
	// point it at the file the gate loads at start. HMAC secret files are
	// resolved relative to its directory.
	Path string
	// Interval between polls. Optional, defaults to IntervalDefault.
	Interval time.Duration
	// Logger gets one line per accepted or refused bundle. Optional,
	// defaults to slog.Default().
	Logger *slog.Logger

	mu     sync.Mutex
	status Status
}

// Status is the fetcher's last outcome.
type Status struct {
	Version     uint64    // the bundle in force
	LastSuccess time.Time // last poll that ended without error (zero: none)
	LastError   error     // the last poll's error, nil if it succeeded
	Refused     uint64    // bundles refused so far (unsigned, forged, older, regressing)
}

// Status returns the last outcome.
func (f *Fetcher) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.status
	st.Version = f.Verifier.Bundle().Version()
	return st
}

// Once polls once. It returns true when a newer bundle was installed; a
// published bundle no newer than the one in force is not an error.
func (f *Fetcher) Once(ctx context.Context) (bool, error) {
	updated, err := f.once(ctx)
	f.mu.Lock()
	f.status.LastError = err
	if err == nil {
		f.status.LastSuccess = time.Now()
	}
	if err != nil && !errors.Is(err, errUnreachable) {
		f.status.Refused++
	}
	f.mu.Unlock()
	return updated, err
}

var errUnreachable = errors.New("bundlefetch: source unreachable")

func (f *Fetcher) once(ctx context.Context) (bool, error) {
	sb, err := f.Source(ctx)
	if err != nil {
		return false, fmt.Errorf("%w: %w", errUnreachable, err)
	}
	cur := f.Verifier.Bundle()
	dir := ""
	if f.Path != "" {
		dir = filepath.Dir(f.Path)
	}
	next, err := cur.VerifyUpdate(sb, dir)
	if errors.Is(err, grant.ErrBundleNotNewer) {
		return false, nil // nothing new: the normal case
	}
	if err != nil {
		f.logger().Warn("trust bundle refused; keeping the last good one", "version", cur.Version(), "code", grant.CodeOf(err), "error", err)
		return false, fmt.Errorf("bundlefetch: refused: %w", err)
	}
	if f.Path != "" {
		if err := grant.WriteFileAtomic(f.Path, []byte(sb.Bundle), 0o644); err != nil {
			return false, fmt.Errorf("bundlefetch: persist %s: %w", f.Path, err)
		}
	}
	if err := f.Verifier.Replace(next); err != nil {
		return false, err // a concurrent update installed a newer one
	}
	f.logger().Info("trust bundle updated", "from", cur.Version(), "to", next.Version())
	return true, nil
}

// Run polls every Interval until ctx ends. Errors are recorded in Status
// and logged; they never stop the loop.
func (f *Fetcher) Run(ctx context.Context) {
	iv := f.Interval
	if iv <= 0 {
		iv = IntervalDefault
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		if _, err := f.Once(ctx); err != nil && ctx.Err() == nil && errors.Is(err, errUnreachable) {
			f.logger().Warn("trust bundle source unreachable; keeping the last good one", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (f *Fetcher) logger() *slog.Logger {
	if f.Logger == nil {
		return slog.Default()
	}
	return f.Logger
}
