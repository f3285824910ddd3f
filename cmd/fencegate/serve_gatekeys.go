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
	fs.StringVar(&g.file, "gate-keys", "", "gate keys (JSON, gateKeys.v1; fencegate gate enroll --registry-keys writes it): each enrolled gate's own HMAC key and resources; answers carry its proofs (gateProofs); reloaded on SIGHUP and when the file changes")
	fs.Uint64Var(&g.pollMs, "gate-keys-poll-ms", httpapi.PolicyPollIntervalMsDefault, "how often the --gate-keys file is checked for a change (0: only on SIGHUP)")
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

// watchGateKeys says which gate keys are in force and keeps the file
// reloaded (SIGHUP, or a change of the file) until ctx ends.
func watchGateKeys(ctx context.Context, f *httpapi.GateKeysFile, pollMs uint64, logger *slog.Logger) {
	if f == nil {
		return
	}
	f.LogLoaded(ctx, logger)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		f.Watch(ctx, pollMs, hup, logger)
	}()
}
