package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
)

// gateKeysOptions are serve's flags for per-gate keys: a gate-keys file
// (gateKeys.v1) whose gates get their own HMAC proofs beside the
// registry's, for gates that cannot check Ed25519 (the gate inside
// PostgreSQL).
type gateKeysOptions struct {
	file   string
	pollMs uint64
}

func (g *gateKeysOptions) flags(fs *pflag.FlagSet) {
	fs.StringVar(&g.file, "gate-keys", "", "gate keys (JSON, gateKeys.v1; fencegate gate enroll --registry-keys writes it): each enrolled gate's own HMAC key and resources; answers carry its proofs (gateProofs); reloaded on SIGHUP and when it or a key file it names changes; a key ID is used once, forever (the store's key history)")
	fs.Uint64Var(&g.pollMs, "gate-keys-poll-ms", httpapi.PolicyPollIntervalMsDefault, "how often the --gate-keys file is checked for a change, and its key files' status (0: only on SIGHUP, which reads them all)")
}

// load reads the gate-keys file and its key files; they must load for
// serve to start. Nil without --gate-keys.
func (g *gateKeysOptions) load() (*httpapi.GateKeysFile, error) {
	if g.file == "" {
		return nil, nil
	}
	f, err := httpapi.LoadGateKeysFile(g.file)
	if err != nil {
		return nil, fmt.Errorf("--gate-keys: %w", err)
	}
	return f, nil
}

// gateKeysRegistryOptions are the registry options of f (none when f is nil).
func gateKeysRegistryOptions(f *httpapi.GateKeysFile) []registry.Option {
	if f == nil {
		return nil
	}
	return []registry.Option{registry.WithGateProofs(f)}
}

// watchGateKeys checks the gate keys loaded against the registry's key
// history (a key ID is used once, forever: a start that brings back a
// dropped or retired ID, or one with another secret, fails here, before
// serve answers), says which keys are in force, and keeps the file
// reloaded (SIGHUP, or a change of the file or of a key file it names)
// until ctx ends, each reload checked against the history too.
func watchGateKeys(ctx context.Context, f *httpapi.GateKeysFile, reg *registry.Registry, pollMs uint64, logger *slog.Logger) error {
	if f == nil {
		return nil
	}
	a, err := f.Admit(ctx, reg)
	if err != nil {
		logger.LogAttrs(ctx, slog.LevelError, "gate keys refused by the key history: not starting",
			slog.String("file", f.Path()), slog.String("error", err.Error()))
		return fmt.Errorf("--gate-keys: %w", err)
	}
	// SIGHUP is caught before the keys are announced: once the log says
	// they are loaded, a SIGHUP reloads them and never ends serve.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	logger.LogAttrs(ctx, slog.LevelInfo, "gate key history", slog.Int("keys", a.Keys), slog.Bool("changed", a.Changed), slog.Uint64("revision", a.Revision))
	f.LogLoaded(ctx, logger)
	go func() {
		defer signal.Stop(hup)
		f.Watch(ctx, pollMs, hup, logger)
	}()
	return nil
}
