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

	"github.com/fencegate/fencegate/grant"
)

// GateKeysFile is the registry's gate keys in a file (serve --gate-keys),
// reloadable without a restart as the resource policy is: Reload puts a
// new file in force only if it parses, its key files load, and it undoes
// no rotation step (GateKeys.CheckSuccessor); otherwise the keys before
// it stay in force and Reload says why. GateProofs always answers from
// the keys last loaded. Safe for concurrent use.
type GateKeysFile struct {
	path string
	cur  atomic.Pointer[GateKeys]
	mu   sync.Mutex // one Reload at a time
}

// LoadGateKeysFile reads the gate keys at path and their key files; all
// must load for serve to start with them.
func LoadGateKeysFile(path string) (*GateKeysFile, error) {
	gk, err := readGateKeys(path)
	if err != nil {
		return nil, err
	}
	f := &GateKeysFile{path: path}
	f.cur.Store(gk)
	return f, nil
}

func readGateKeys(path string) (*GateKeys, error) {
	b, err := readKeptFile(path, "gate keys", GateKeysFileBytesMax)
	if err != nil {
		return nil, err
	}
	gk, err := ParseGateKeys(b, filepath.Dir(path))
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

// Reload reads the file again. When its bytes are those in force it
// changes nothing and returns false, nil (a key file is never read again
// for the same gate-keys file: key material never changes under a key
// ID). When the new file loads and undoes no rotation step it is in
// force on return (true, nil). Otherwise the keys in force stay and the
// error says why.
func (f *GateKeysFile) Reload() (changed bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := readKeptFile(f.path, "gate keys", GateKeysFileBytesMax)
	if err != nil {
		return false, err
	}
	if sha256.Sum256(b) == f.cur.Load().sum {
		return false, nil
	}
	gk, err := ParseGateKeys(b, filepath.Dir(f.path))
	if err == nil {
		err = f.cur.Load().CheckSuccessor(gk)
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", f.path, err)
	}
	f.cur.Store(gk)
	return true, nil
}

// Watch reloads the file every intervalMs (0: never by itself) and
// whenever reload receives (serve sends SIGHUP there), until ctx ends. It
// logs each file put in force ("gate keys loaded", with its digest and
// gate count; never a secret) and each reason a reload failed, once until
// it changes, at ERROR, with the digest of the keys kept in force.
func (f *GateKeysFile) Watch(ctx context.Context, intervalMs uint64, reload <-chan os.Signal, logger *slog.Logger) {
	watchReloads(ctx, intervalMs, reload, f.Reload, func(reason string) {
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
