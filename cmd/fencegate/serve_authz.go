package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/fencegate/fencegate/registry/httpapi"
)

// authzOptions are serve's flags for who may lock what: a resource policy
// file, or the explicit choice of none.
type authzOptions struct {
	policyFile string
	pollMs     uint64
	open       bool
}

func (a *authzOptions) flags(fs *pflag.FlagSet) {
	fs.StringVar(&a.policyFile, "authz-policy", "", "resource policy (JSON, resourcePolicy.v1): which identities may acquire, see or break which resources; reloaded on SIGHUP and when the file changes (required, or --authz-open)")
	fs.Uint64Var(&a.pollMs, "authz-poll-ms", httpapi.PolicyPollIntervalMsDefault, "how often the --authz-policy file is checked for a change (0: only on SIGHUP)")
	fs.BoolVar(&a.open, "authz-open", false, "run without a resource policy: every authenticated identity may acquire and see every resource (breaking a lock stays with admins)")
}

// check wants exactly one of the two: a registry where every identity may
// lock every resource is a choice someone makes, never a default.
func (a *authzOptions) check() error {
	switch {
	case a.policyFile != "" && a.open:
		return usagef("--authz-policy and --authz-open exclude each other: give the policy, or say there is none")
	case a.policyFile == "" && !a.open:
		return usagef("who may lock what? give --authz-policy FILE (a resource policy; docs/operations.md, \"Who may lock what\"), " +
			"or --authz-open to let every authenticated identity acquire and see every resource")
	}
	return nil
}

// load reads the policy file; it must parse for serve to start.
func (a *authzOptions) load() (httpapi.Authorizer, *httpapi.PolicyFile, error) {
	if a.open {
		return httpapi.AllowAll{}, nil, nil
	}
	f, err := httpapi.LoadPolicyFile(a.policyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("--authz-policy: %w", err)
	}
	return f, f, nil
}

// announceAndWatch says which authorization is in force, loudly when
// there is none, and keeps a policy file reloaded (SIGHUP, or a change
// of the file) until ctx ends.
func announceAndWatch(ctx context.Context, f *httpapi.PolicyFile, pollMs uint64, logger *slog.Logger, stderr io.Writer) {
	if f == nil {
		const warning = "AUTHORIZATION OPEN (--authz-open): every authenticated identity may acquire and see every resource (breaking a lock stays with admins); give --authz-policy FILE to scope them"
		fmt.Fprintln(stderr, "fencegate serve: WARNING: "+warning)
		logger.LogAttrs(ctx, slog.LevelWarn, warning, slog.Bool("authz_open", true))
		return
	}
	p := f.Policy()
	logger.LogAttrs(ctx, slog.LevelInfo, "resource policy loaded", slog.String("file", f.Path()),
		slog.String("digest", p.Digest()), slog.Int("rules", p.Rules()))
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		f.Watch(ctx, pollMs, hup, logger)
	}()
}
