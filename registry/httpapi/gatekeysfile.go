package httpapi

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
)

// GateKeysFile is the registry's gate keys in a file (serve --gate-keys),
// reloadable without a restart as the resource policy is: Reload puts a
// new file in force only if it parses, its key files load, it undoes no
// rotation step of the keys in force (GateKeys.CheckSuccessor) and, once
// Admit has bound the registry's key history, the history admits it (a
// key ID is used once, forever: registry.AdmitGateKeys); otherwise the
// keys before it stay in force and Reload says why. GateProofs always
// answers from the keys last loaded. Safe for concurrent use.
type GateKeysFile struct {
	path    string
	cur     atomic.Pointer[GateKeys]
	mu      sync.Mutex   // one Reload at a time
	history KeyHistorian // nil until Admit; under mu
}

// KeyHistorian keeps the registry's gate key history: *registry.Registry
// (its store's history, shared by every replica).
type KeyHistorian interface {
	AdmitGateKeys(ctx context.Context, keys []registry.GateKeyUse) (registry.KeyAdmission, error)
}

// GateKeysReloadTimeoutMs bounds one load or reload of the gate keys,
// 15 s: the file, every key file it names (each also bounded by
// keptfile.ReadTimeoutMs) and the key history's read and
// compare-and-swap in the store.
const GateKeysReloadTimeoutMs = 15_000

// LoadGateKeysFile reads the gate keys at path and their key files; all
// must load for serve to start with them. Nothing is in force at a
// registry until Admit has checked them against its key history.
func LoadGateKeysFile(path string) (*GateKeysFile, error) {
	ctx, cancel := context.WithTimeout(context.Background(), GateKeysReloadTimeoutMs*time.Millisecond)
	defer cancel()
	gk, err := readGateKeys(ctx, path)
	if err != nil {
		return nil, err
	}
	f := &GateKeysFile{path: path}
	f.cur.Store(gk)
	return f, nil
}

func readGateKeys(ctx context.Context, path string) (*GateKeys, error) {
	b, err := readKeptFileContext(ctx, path, "gate keys", GateKeysFileBytesMax)
	if err != nil {
		return nil, err
	}
	gk, err := ParseGateKeysContext(ctx, b, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return gk, nil
}

// Path is the file's path.
func (f *GateKeysFile) Path() string { return f.path }

// Keys is the gate keys in force.
func (f *GateKeysFile) Keys() *GateKeys { return f.cur.Load() }

// GateProofs implements registry.GateProver with the keys in force.
func (f *GateKeysFile) GateProofs(resource string, g, status grant.Message) ([]grant.GateProof, error) {
	return f.cur.Load().GateProofs(resource, g, status)
}

// Admit checks the keys loaded against h's key history and records them
// there (registry.AdmitGateKeys), and binds h: every later Reload is
// checked against it too. serve calls it once, before it answers: a start
// whose file brings back a key ID the history dropped or retired, or
// gives one another secret, fails here (a *registry.KeyHistoryError).
func (f *GateKeysFile) Admit(ctx context.Context, h KeyHistorian) (registry.KeyAdmission, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, GateKeysReloadTimeoutMs*time.Millisecond)
	defer cancel()
	a, err := h.AdmitGateKeys(ctx, f.cur.Load().Uses())
	if err != nil {
		return a, fmt.Errorf("%s: %w", f.path, err)
	}
	f.history = h
	return a, nil
}

// Reload reads the file and every key file it names again (what serve
// does on SIGHUP). When they hold what is in force (the file's bytes,
// each key's ID and secret) it changes nothing and returns false, nil; so
// a key file rewritten in place is noticed though the file is not. When
// the new keys load, undo no rotation step and (after Admit) the key
// history admits them, they are in force on return (true, nil).
// Otherwise the keys in force stay and the error says why.
func (f *GateKeysFile) Reload(ctx context.Context) (changed bool, err error) {
	return f.reload(ctx, true)
}

// Poll is Reload made cheap for the periodic check: when the file's
// bytes are those in force and no key file's status (keptfile.Unchanged)
// has moved since it was read, it reads no key file and returns false,
// nil. A key file replaced, or rewritten with another size or time, is
// read again as Reload reads it; one rewritten keeping all three is seen
// on the next Reload.
func (f *GateKeysFile) Poll(ctx context.Context) (changed bool, err error) {
	return f.reload(ctx, false)
}

func (f *GateKeysFile) reload(ctx context.Context, full bool) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, GateKeysReloadTimeoutMs*time.Millisecond)
	defer cancel()
	b, err := readKeptFileContext(ctx, f.path, "gate keys", GateKeysFileBytesMax)
	if err != nil {
		return false, err
	}
	cur := f.cur.Load()
	if !full && sha256.Sum256(b) == cur.sum && cur.keyFilesUnchanged() {
		return false, nil
	}
	gk, err := ParseGateKeysContext(ctx, b, filepath.Dir(f.path))
	if err != nil {
		return false, fmt.Errorf("%s: %w", f.path, err)
	}
	if gk.material == cur.material {
		// The same keys: keep the key files' statuses as read now, so the
		// next poll compares with them.
		f.cur.Store(gk)
		return false, nil
	}
	if err := cur.CheckSuccessor(gk); err != nil {
		return false, fmt.Errorf("%s: %w", f.path, err)
	}
	if f.history != nil {
		if _, err := f.history.AdmitGateKeys(ctx, gk.Uses()); err != nil {
			return false, fmt.Errorf("%s: %w", f.path, err)
		}
	}
	f.cur.Store(gk)
	return true, nil
}

// Watch polls the file every intervalMs (0: never by itself; Poll) and
// reloads it whenever reload receives (serve sends SIGHUP there; Reload),
// until ctx ends. It
// logs each file put in force ("gate keys loaded", with its digest and
// gate count; never a secret) and each reason a reload failed, once until
// it changes, at ERROR, with the digest of the keys kept in force.
func (f *GateKeysFile) Watch(ctx context.Context, intervalMs uint64, reload <-chan os.Signal, logger *slog.Logger) {
	watchReloads(ctx, intervalMs, reload, func(signalled bool) (bool, error) { return f.reload(ctx, signalled) }, func(reason string) {
		logger.LogAttrs(ctx, slog.LevelError, "gate keys not reloaded: keeping the keys in force",
			slog.String("file", f.path), slog.String("error", reason), slog.String("kept", f.Keys().Digest()))
	}, func() { f.logLoaded(ctx, logger) })
}

// logLoaded logs the keys in force ("gate keys loaded").
func (f *GateKeysFile) logLoaded(ctx context.Context, logger *slog.Logger) {
	gk := f.Keys()
	logger.LogAttrs(ctx, slog.LevelInfo, "gate keys loaded",
		slog.String("file", f.path), slog.String("digest", gk.Digest()), slog.Int("gates", gk.Gates()))
}

// LogLoaded logs the keys in force, as Watch does after a reload; serve
// calls it once at start.
func (f *GateKeysFile) LogLoaded(ctx context.Context, logger *slog.Logger) { f.logLoaded(ctx, logger) }
