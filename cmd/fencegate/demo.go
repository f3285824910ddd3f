//go:build unix

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
)

func init() { register(newDemoCmd) }

const demoLong = `Start here: the specification's Worker A story with real processes.

Starts a registry (fencegate serve, embedded etcd, temporary data dir), the
example "ledger" service (demo/ledger: writes through the gate on SQLite,
or with --resource on Redis or an S3-compatible store)
and two worker processes. Worker A takes a short lease, builds its write,
and is frozen with SIGSTOP past its TTL; worker B takes over and writes;
A is resumed and sends its stale write. Then the same story against a
lease-only ledger (the negative control). Exit status 0 only if the fenced
run kept B's result and the lease-only run lost it.

The subcommands are the demo's child processes, and a way to run the
example on its own.`

// Demo limits.
const (
	demoTTLMsDefault   = 2000             // worker A's lease; the registry's minimum (registry.TTLMsMinDefault)
	demoTTLMsSuccessor = 15000            // worker B's lease (the registry's default TTL)
	demoStartTimeout   = 20 * time.Second // serve (embedded etcd) and the ledgers must be listening by then
	demoStepTimeout    = 15 * time.Second // any one step of a story
)

// demoKey is the ledger row both workers compute.
const demoKey = "invoice-batch/2026-07-19/total"

// demoRowsKey is the row B writes in its first segment.
const demoRowsKey = "invoice-batch/2026-07-19/rows"

func newDemoCmd() *cobra.Command {
	var ttlMs uint64
	var db, resource, s3Endpoint string
	var keep bool
	c := &cobra.Command{
		Use:     "demo",
		Short:   "start here: the spec's Worker A story with real processes, fenced and lease-only",
		Long:    demoLong,
		Example: "  fencegate demo\n  fencegate demo --db postgres://user@localhost/ledger --keep",
		RunE: func(c *cobra.Command, _ []string) error {
			if ttlMs < demoTTLMsDefault {
				// A status proof ends ClockSkewMaxMs (500ms) before the lease and the
				// client keeps ProofMargin (500ms): a shorter lease leaves A no time
				// to build its envelope.
				return usagef("--ttl-ms must be at least %d", demoTTLMsDefault)
			}
			if err := checkDemoResource(resource, db, s3Endpoint); err != nil { // hook: demo --resource
				return err
			}
			return runDemo(c.Context(), ttlMs, db, demoStore{resource, s3Endpoint}, keep, c.OutOrStdout())
		},
	}
	c.Flags().Uint64Var(&ttlMs, "ttl-ms", demoTTLMsDefault, "worker A's lease TTL in ms (A stays frozen TTL + lock-delay)")
	c.Flags().StringVar(&db, "db", "", "the fenced ledger's database: a postgres://… URL (default: a temporary SQLite file)")
	c.Flags().BoolVar(&keep, "keep", false, "keep the temporary directory (registry data, ledger databases, logs)")
	demoResourceFlag(c.Flags(), &resource, &s3Endpoint) // hook: demo --resource (demo_resource.go)
	c.AddCommand(newDemoLedgerCmd(), newDemoWorkerCmd(), newDemoResledgerCmd())
	return c
}

func runDemo(ctx context.Context, ttlMs uint64, db string, store demoStore, keep bool, stdout io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "fencegate-demo-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintf(stdout, "keeping %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	d := &demo{self: self, dir: dir, out: stdout, start: time.Now(), ttlMs: ttlMs, resource: store.kind, s3Endpoint: store.s3Endpoint}
	defer d.stopAll()
	return d.run(ctx, db)
}

// demo is one run of the story: the processes it started and the clock
// its timeline is relative to.
type demo struct {
	self, dir  string
	out        io.Writer
	start      time.Time
	ttlMs      uint64
	resource   string            // hook: demo --resource (demo_resource.go)
	s3Endpoint string            // with --resource s3: the store's URL
	tokens     map[string]string // identity → bearer token
	registry   string            // serve's URL
	mu         sync.Mutex
	children   []*child
}

func (d *demo) run(ctx context.Context, db string) error {
	if err := d.writeTokens(); err != nil {
		return err
	}
	if err := d.writePolicy(); err != nil {
		return err
	}
	fencedURL, unsafeURL, err := d.startServicesFor(ctx, db) // hook: demo --resource (demo_resource.go)
	if err != nil {
		return err
	}
	resource := "invoice-batch/2026-07-19"
	if db != "" {
		// A database that outlives the demo remembers earlier runs' fences,
		// while each run's registry starts from fence 1: a new resource
		// per run keeps the story the same.
		resource += fmt.Sprintf("/run-%d", d.start.Unix())
	}
	d.banner("1. FENCED: the ledger's writes go through the gate")
	fenced, err := d.story(ctx, fencedURL, resource, false)
	if err != nil {
		return fmt.Errorf("fenced run: %w", err)
	}
	d.banner("2. LEASE-ONLY (negative control): the same story, no gate at the ledger")
	unsafe, err := d.story(ctx, unsafeURL, "invoice-batch/2026-07-19.lease-only", true)
	if err != nil {
		return fmt.Errorf("lease-only run: %w", err)
	}
	return d.verdict(fenced, unsafe)
}

// writeTokens writes the development token file serve and the ledgers
// share: one random bearer token per workload identity.
func (d *demo) writeTokens() error {
	d.tokens = map[string]string{}
	var lines []string
	for _, id := range []string{"worker-a", "worker-b"} {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		d.tokens[id] = hex.EncodeToString(b)
		lines = append(lines, d.tokens[id]+" "+id)
	}
	return os.WriteFile(d.tokenFile(), []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

func (d *demo) tokenFile() string { return filepath.Join(d.dir, "tokens") }

// demoPolicy is the resource policy the demo's registry runs with: the
// two workers may lock and see the invoice batches, and nothing else.
const demoPolicy = `{"schema": "resourcePolicy.v1", "rules": [
  {"note": "the demo's workers", "identities": ["worker-a", "worker-b"], "resources": ["invoice-batch/*"], "verbs": ["acquire", "see"]}]}
`

// writePolicy writes demoPolicy beside the token file.
func (d *demo) writePolicy() error { return os.WriteFile(d.policyFile(), []byte(demoPolicy), 0o600) }

func (d *demo) policyFile() string { return filepath.Join(d.dir, "policy.json") }

// serveArgs are the registry's arguments, the same for every story.
func (d *demo) serveArgs(regDir string) []string {
	return []string{"serve", "--data-dir", regDir, "--listen", "127.0.0.1:0", "--token-file", d.tokenFile(), "--authz-policy", d.policyFile()}
}

var (
	serveListenLine  = regexp.MustCompile(`listening on (http://\S+)`)
	ledgerListenLine = regexp.MustCompile(`ledger: listening on (http://[^,\s]+)`)
)

// startServices starts serve and the lease-only ledger together, then the
// fenced ledger once serve has written its trust bundle.
func (d *demo) startServices(ctx context.Context, db string) (fenced, unsafe string, err error) {
	regDir := filepath.Join(d.dir, "registry")
	serve, err := d.spawn(ctx, "registry", false, d.serveArgs(regDir)...)
	if err != nil {
		return "", "", err
	}
	ul, err := d.spawn(ctx, "lease-only ledger", false, "demo", "ledger", "--lease-only", "--db", filepath.Join(d.dir, "ledger-lease-only.db"), "--token-file", d.tokenFile())
	if err != nil {
		return "", "", err
	}
	if d.registry, err = serve.waitLine(ctx, serveListenLine, demoStartTimeout); err != nil {
		return "", "", err
	}
	d.say("registry", "fencegate serve listening on "+d.registry+" (embedded etcd, data in "+regDir+")")
	if db == "" {
		db = filepath.Join(d.dir, "ledger.db")
	}
	fl, err := d.spawn(ctx, "fenced ledger", false, "demo", "ledger", "--db", db, "--token-file", d.tokenFile(),
		"--trust-bundle", filepath.Join(regDir, "trust-bundle.json"))
	if err != nil {
		return "", "", err
	}
	if fenced, err = fl.waitLine(ctx, ledgerListenLine, demoStartTimeout); err != nil {
		return "", "", err
	}
	d.say("ledger", "fenced ledger listening on "+fenced+" (gate/sqlgate, trust bundle from the registry)")
	if unsafe, err = ul.waitLine(ctx, ledgerListenLine, demoStartTimeout); err != nil {
		return "", "", err
	}
	d.say("ledger", "lease-only ledger listening on "+unsafe+" (negative control: no gate)")
	return fenced, unsafe, nil
}

func (d *demo) banner(s string) { fmt.Fprintf(d.out, "\n=== %s ===\n", s) }

// say prints one timeline line.
func (d *demo) say(who, msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, "t+%5.2fs  %-9s %s\n", time.Since(d.start).Seconds(), who, msg)
}

func msDuration(ms uint64) time.Duration { return time.Duration(ms) * time.Millisecond }
