package httpapi

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
)

// PolicyPollIntervalMsDefault is how often serve has PolicyFile.Watch
// look at the file for a change, 2 s: a policy edited in place, or
// swapped in by a ConfigMap's symlink, is in force within it.
const PolicyPollIntervalMsDefault = 2000

// PolicyFile is the resource policy in a file, reloadable without a
// restart: Reload reads the file again and puts the new policy in force
// only if it parses, so a bad edit never opens or closes anything; the
// policy before it stays in force, and Reload says why. Authorize always
// answers from the policy last loaded. Safe for concurrent use.
type PolicyFile struct {
	path string
	cur  atomic.Pointer[Policy]
	mu   sync.Mutex // one Reload at a time
}

// LoadPolicyFile reads and parses the policy at path; the file must
// parse (ParsePolicy) for serve to start with it.
func LoadPolicyFile(path string) (*PolicyFile, error) {
	b, err := readKeptFile(path, "resource policy", PolicyFileBytesMax)
	if err != nil {
		return nil, err
	}
	p, err := ParsePolicy(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f := &PolicyFile{path: path}
	f.cur.Store(p)
	return f, nil
}

// Path is the policy's file.
func (f *PolicyFile) Path() string { return f.path }

// Policy is the policy in force.
func (f *PolicyFile) Policy() *Policy { return f.cur.Load() }

// Authorize implements Authorizer with the policy in force.
func (f *PolicyFile) Authorize(identity string, verb Verb, resource string) error {
	return f.cur.Load().Authorize(identity, verb, resource)
}

// Reload reads the file again. When its bytes are those in force it
// changes nothing and returns false, nil. When they parse, the new policy
// is in force on return (true, nil). Otherwise the policy in force stays
// and the error says why.
func (f *PolicyFile) Reload() (changed bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := readKeptFile(f.path, "resource policy", PolicyFileBytesMax)
	if err != nil {
		return false, err
	}
	if sha256.Sum256(b) == f.cur.Load().sum {
		return false, nil
	}
	p, err := ParsePolicy(b)
	if err != nil {
		return false, fmt.Errorf("%s: %w", f.path, err)
	}
	f.cur.Store(p)
	return true, nil
}

// Watch reloads the policy every intervalMs (0: never by itself) and
// whenever reload receives (serve sends SIGHUP there), until ctx ends.
// It logs each policy put in force ("resource policy loaded", with its
// digest and rule count) and each reason a reload failed, once until it
// changes, at ERROR, with the digest of the policy kept in force.
func (f *PolicyFile) Watch(ctx context.Context, intervalMs uint64, reload <-chan os.Signal, logger *slog.Logger) {
	watchReloads(ctx, intervalMs, reload, func(bool) (bool, error) { return f.Reload() }, func(reason string) {
		logger.LogAttrs(ctx, slog.LevelError, "resource policy not reloaded: keeping the policy in force",
			slog.String("file", f.path), slog.String("error", reason), slog.String("kept", f.Policy().Digest()))
	}, func() {
		p := f.Policy()
		logger.LogAttrs(ctx, slog.LevelInfo, "resource policy loaded",
			slog.String("file", f.path), slog.String("digest", p.Digest()), slog.Int("rules", p.Rules()))
	})
}
