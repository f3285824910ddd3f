package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/fencegate/fencegate/registry/httpapi"
)

// DevToken is the bearer token of `serve --dev`'s one identity, "dev": a
// well-known token for a registry that only listens on loopback, so the
// README's examples run as printed. Never for production.
const DevToken = "fencegate-dev-token"

// devIdentity is --dev's identity (also its admin).
const devIdentity = "dev"

// devOptions is --dev.
type devOptions struct{ on bool }

func (d *devOptions) flags(fs *pflag.FlagSet) {
	fs.BoolVar(&d.on, "dev", false, "a development registry in one command: loopback only, data in "+filepath.Join(os.TempDir(), "fencegate-dev")+
		" unless --data-dir, one identity \"dev\" (an admin) with the token "+DevToken+", every identity may lock everything; never for production")
}

// apply fills what --dev implies, refusing what it cannot be combined
// with. It writes nothing: the identity is served from memory (devAuth).
func (d *devOptions) apply(o *serveOptions, stderr io.Writer) error {
	if !d.on {
		return nil
	}
	host, _, err := net.SplitHostPort(o.listen)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return usagef("--dev listens on loopback only: give --listen 127.0.0.1:PORT, not %q", o.listen)
	}
	if o.tokenFile != "" || o.clientCA != "" || o.authz.policyFile != "" {
		return usagef("--dev brings its own identity and no resource policy: drop --token-file, --client-ca and --authz-policy, or drop --dev")
	}
	if o.dataDir == "" {
		o.dataDir = filepath.Join(os.TempDir(), "fencegate-dev")
	}
	o.authz.open = true
	o.admins = append(o.admins, devIdentity)
	fmt.Fprintf(stderr, "fencegate serve: development registry (--dev): export FENCEGATE_REGISTRY=http://%s FENCEGATE_TOKEN=%s; data in %s; never for production\n",
		o.listen, DevToken, o.dataDir)
	return nil
}

// devAuth is --dev's one identity, from memory.
func devAuth() (httpapi.Authenticator, error) {
	t, err := httpapi.ParseTokenFile([]byte(DevToken + " " + devIdentity + "\n"))
	if err != nil {
		return nil, err
	}
	return httpapi.Chain{t}, nil
}
