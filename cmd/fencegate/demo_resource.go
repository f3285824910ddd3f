//go:build unix

package main

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/fencegate/fencegate/demo/resledger"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// This file is `fencegate demo --resource redis|s3`: the same Worker A
// story with the ledger kept in Redis (gate/redisgate) or an
// S3-compatible object store (gate/objgate) instead of SQLite. demo.go
// calls it through three marked hooks; everything else is here.

// Resources the demo can protect besides SQL.
const (
	demoResourceSQL   = "sql"
	demoResourceRedis = "redis"
	demoResourceS3    = "s3"
)

// demoStore is what the demo's ledger keeps its values in.
type demoStore struct {
	kind       string // demoResourceSQL, demoResourceRedis or demoResourceS3
	s3Endpoint string // demoResourceS3: the store's URL
}

// demoResourceFlag declares --resource and --s3-endpoint on the demo's
// flags.
func demoResourceFlag(fs *pflag.FlagSet, resource, s3Endpoint *string) {
	fs.StringVar(resource, "resource", demoResourceSQL, "what the ledger keeps its values in: sql (SQLite or --db), redis (a redis-server the demo starts) or s3 (the S3-compatible store at --s3-endpoint)")
	fs.StringVar(s3Endpoint, "s3-endpoint", "", "with --resource s3: an S3-compatible store that honours conditional writes (MinIO, or `go run ./testkit/s3local/cmd/s3local` for one in memory)")
}

func checkDemoResource(resource, db, s3Endpoint string) error {
	switch resource {
	case demoResourceSQL:
		if s3Endpoint != "" {
			return usagef("--s3-endpoint goes with --resource s3")
		}
		return nil
	case demoResourceRedis, demoResourceS3:
		if db != "" {
			return usagef("--db goes with --resource sql")
		}
		if resource == demoResourceS3 && s3Endpoint == "" {
			return usagef("--resource s3 needs --s3-endpoint URL: an S3-compatible store that honours conditional writes (MinIO; or, in memory, go run ./testkit/s3local/cmd/s3local)")
		}
		return nil
	}
	return usagef("--resource %q (want sql, redis or s3)", resource)
}

// newDemoResledgerCmd is `demo resledger`, the demo's ledger child on
// Redis or S3.
func newDemoResledgerCmd() *cobra.Command {
	var o resledger.ServeOptions
	c := &cobra.Command{
		Use:   "resledger --resource redis|s3 --token-file FILE (--trust-bundle FILE | --lease-only)",
		Short: "the example ledger on Redis (gate/redisgate) or an S3-compatible store (gate/objgate)",
		RunE: func(c *cobra.Command, _ []string) error {
			if o.TokenFile == "" || (o.TrustBundle == "" && !o.LeaseOnly) {
				return usagef("--token-file and --trust-bundle (or --lease-only) are required")
			}
			return resledger.Serve(c.Context(), o, c.OutOrStdout())
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:0", "address to serve on")
	fs.StringVar(&o.Resource, "resource", "", "redis or s3 (required)")
	fs.StringVar(&o.RedisAddr, "redis", "", "redis-server host:port")
	fs.StringVar(&o.S3Endpoint, "s3-endpoint", "", "S3-compatible store URL")
	fs.StringVar(&o.Bucket, "bucket", "ledger", "bucket (created if missing)")
	fs.StringVar(&o.Prefix, "prefix", "ledger/", "key prefix")
	fs.StringVar(&o.TrustBundle, "trust-bundle", "", "the registry's trust bundle (required unless --lease-only)")
	fs.StringVar(&o.TokenFile, "token-file", "", "bearer tokens → identities, as for serve (required)")
	fs.BoolVar(&o.LeaseOnly, "lease-only", false, "negative control: no gate")
	reportFlags(fs, &o.Report) // the dashboard (serve_dashboard.go)
	return c
}

var redisReadyLine = regexp.MustCompile(`(Ready to accept connections)`)

// startServicesFor starts what the story needs for d.resource: serve,
// the store, and a fenced and a lease-only ledger on it.
func (d *demo) startServicesFor(ctx context.Context, db string) (fenced, unsafe string, err error) {
	if d.resource == "" || d.resource == demoResourceSQL {
		return d.startServices(ctx, db)
	}
	regDir := filepath.Join(d.dir, "registry")
	serve, err := d.spawn(ctx, "registry", false, d.serveArgs(regDir)...)
	if err != nil {
		return "", "", err
	}
	store, err := d.startStore(ctx)
	if err != nil {
		return "", "", err
	}
	if d.registry, err = serve.waitLine(ctx, serveListenLine, demoStartTimeout); err != nil {
		return "", "", err
	}
	d.say("registry", "fencegate serve listening on "+d.registry+" (embedded etcd, data in "+regDir+")")
	common := append([]string{"demo", "resledger", "--resource", d.resource, "--token-file", d.tokenFile()}, store...)
	fl, err := d.spawn(ctx, "fenced ledger", false, append(common, "--prefix", "fenced/", "--trust-bundle", filepath.Join(regDir, "trust-bundle.json"))...)
	if err != nil {
		return "", "", err
	}
	ul, err := d.spawn(ctx, "lease-only ledger", false, append(common, "--prefix", "lease-only/", "--lease-only")...)
	if err != nil {
		return "", "", err
	}
	if fenced, err = fl.waitLine(ctx, ledgerListenLine, demoStartTimeout); err != nil {
		return "", "", err
	}
	d.say("ledger", "fenced ledger listening on "+fenced+" ("+d.resource+", trust bundle from the registry)")
	if unsafe, err = ul.waitLine(ctx, ledgerListenLine, demoStartTimeout); err != nil {
		return "", "", err
	}
	d.say("ledger", "lease-only ledger listening on "+unsafe+" (negative control: same store, no gate)")
	return fenced, unsafe, nil
}

// startStore starts redis-server, or names the S3-compatible store, and
// returns the resledger flags that reach it.
func (d *demo) startStore(ctx context.Context) ([]string, error) {
	if d.resource == demoResourceS3 {
		d.say("store", "S3-compatible store at "+d.s3Endpoint+" (the fenced ledger's gate checks it honours conditional writes)")
		return []string{"--s3-endpoint", d.s3Endpoint, "--bucket", "ledger"}, nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("--resource redis needs redis-server (Debian: apt-get install redis-server): %w", err)
	}
	port, err := demoFreePort()
	if err != nil {
		return nil, err
	}
	// The persistence redisgate accepts for enforce mode: every write
	// fsynced to the append-only file before Redis answers it, so no
	// restart or crash loses a fence (docs/adapters.md).
	c, err := d.spawnBinary(ctx, "redis", bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "yes", "--appendfsync", "always", "--dir", d.dir, "--loglevel", "notice")
	if err != nil {
		return nil, err
	}
	if _, err := c.waitLine(ctx, redisReadyLine, demoStartTimeout); err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	d.say("store", "redis-server "+addr+" (appendonly yes, appendfsync always: keeps every fence across a restart)")
	return []string{"--redis", addr}, nil
}

// spawnBinary is spawn for another program: it runs bin instead of the
// demo's own binary.
func (d *demo) spawnBinary(ctx context.Context, name, bin string, args ...string) (*child, error) {
	self := d.self
	d.self = bin
	defer func() { d.self = self }()
	return d.spawn(ctx, name, false, args...)
}

func demoFreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
