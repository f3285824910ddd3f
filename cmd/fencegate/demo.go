//go:build unix

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencegate/fencegate/internal/childproc"
	"github.com/fencegate/fencegate/internal/demo/ledger"
	"github.com/spf13/cobra"
)

func init() { register(newDemoCmd) }

const demoLong = `Start here: the specification's Worker A story with real processes.

Starts a registry (fencegate serve, embedded etcd, temporary data dir), the
example "ledger" service (internal/demo/ledger: writes through the gate on SQLite,
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
	demoTTLMsDefault   = 2000             // worker A's lease; the registry's minimum is 1000
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
	var db, resource string
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
			if err := checkDemoResource(resource, db); err != nil { // hook: demo --resource
				return err
			}
			return runDemo(c.Context(), ttlMs, db, resource, keep, c.OutOrStdout())
		},
	}
	c.Flags().Uint64Var(&ttlMs, "ttl-ms", demoTTLMsDefault, "worker A's lease TTL in ms (A stays frozen TTL + lock-delay)")
	c.Flags().StringVar(&db, "db", "", "the fenced ledger's database: a postgres://… URL (default: a temporary SQLite file)")
	c.Flags().BoolVar(&keep, "keep", false, "keep the temporary directory (registry data, ledger databases, logs)")
	demoResourceFlag(c.Flags(), &resource) // hook: demo --resource (demo_resource.go)
	c.AddCommand(newDemoLedgerCmd(), newDemoWorkerCmd(), newDemoResledgerCmd(), newDemoS3ServerCmd())
	return c
}

func runDemo(ctx context.Context, ttlMs uint64, db, resource string, keep bool, stdout io.Writer) error {
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
	d := &demo{self: self, dir: dir, out: stdout, start: time.Now(), ttlMs: ttlMs, resource: resource}
	defer d.stopAll()
	return d.run(ctx, db)
}

// demo is one run of the story: the processes it started and the clock
// its timeline is relative to.
type demo struct {
	self, dir string
	out       io.Writer
	start     time.Time
	ttlMs     uint64
	resource  string            // hook: demo --resource (demo_resource.go)
	tokens    map[string]string // identity → bearer token
	registry  string            // serve's URL
	mu        sync.Mutex
	children  []*child
}

func (d *demo) run(ctx context.Context, db string) error {
	if err := d.writeTokens(); err != nil {
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

var (
	serveListenLine  = regexp.MustCompile(`listening on (http://\S+)`)
	ledgerListenLine = regexp.MustCompile(`ledger: listening on (http://[^,\s]+)`)
)

// startServices starts serve and the lease-only ledger together, then the
// fenced ledger once serve has written its trust bundle.
func (d *demo) startServices(ctx context.Context, db string) (fenced, unsafe string, err error) {
	regDir := filepath.Join(d.dir, "registry")
	serve, err := d.spawn(ctx, "registry", false, "serve", "--data-dir", regDir, "--listen", "127.0.0.1:0", "--token-file", d.tokenFile())
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

// storyResult is what one run of the story left in the ledger.
type storyResult struct {
	aOutcome string // the outcome of A's late write
	aReason  string
	final    ledger.Value
	bValue   string
}

// story is the spec's first paragraph with real processes.
func (d *demo) story(ctx context.Context, ledgerURL, resource string, leaseOnly bool) (storyResult, error) {
	aValue, bValue := "100 (computed by A before its pause)", "200 (computed by B)"
	a, err := d.startWorker(ctx, "A", ledgerURL, resource, aValue, d.ttlMs, leaseOnly, true)
	if err != nil {
		return storyResult{}, err
	}
	if _, err := a.waitEvent(ctx, "ready"); err != nil {
		return storyResult{}, err
	}
	if err := a.freeze(); err != nil {
		return storyResult{}, err
	}
	frozen := time.Now()
	d.say("demo", fmt.Sprintf("SIGSTOP worker A (pid %d): frozen with its write in hand; its %s lease runs out", a.Pid(), msDuration(d.ttlMs)))
	// B queues for the lease. Its TTL is the registry default's, not A's:
	// the client counts a lease from when the acquire was sent, so with a
	// TTL shorter than the wait B's new lease would start out uncertain
	// (the worker copes, see ledger.CertainWaitMax, but the story is
	// clearer without it).
	b, err := d.startWorker(ctx, "B", ledgerURL, resource, bValue, demoTTLMsSuccessor, leaseOnly, false)
	if err != nil {
		return storyResult{}, err
	}
	bDone, err := b.waitEvent(ctx, "done")
	if err != nil {
		return storyResult{}, err
	}
	if err := a.thaw(); err != nil {
		return storyResult{}, err
	}
	d.say("demo", fmt.Sprintf("SIGCONT worker A after %.1fs frozen: it sends the write it built before the pause", time.Since(frozen).Seconds()))
	res := storyResult{bValue: bValue}
	for {
		e, err := a.waitEvent(ctx, "rejected", "accepted", "done")
		if err != nil {
			return storyResult{}, err
		}
		if e.Kind == "done" {
			break
		}
		res.aOutcome, res.aReason = e.Outcome, e.Reason
	}
	lc := &ledger.Client{Base: ledgerURL, Token: d.tokens["worker-a"]}
	v, _, err := lc.Value(ctx, demoKey)
	if err != nil {
		return storyResult{}, err
	}
	res.final = v
	fence := fmt.Sprintf("fence %d", v.Fence)
	if v.Fence == 0 {
		fence = "no fence"
	}
	d.say("ledger", fmt.Sprintf("%s = %q (writer %s, %s)", demoKey, v.Value, v.Writer, fence))
	if !leaseOnly {
		return res, d.showReceipts(ctx, lc, resource, "settle-b", bDone.Fence)
	}
	return res, nil
}

// showReceipts prints the ledger's receipts for one operation: the record,
// written in the same transaction as the change, that it happened.
func (d *demo) showReceipts(ctx context.Context, lc *ledger.Client, resource, op string, fence uint64) error {
	ans, err := lc.QueryOperation(ctx, resource, op, fence)
	if err != nil {
		return err
	}
	d.say("ledger", fmt.Sprintf("receipts for operation %s: %s", op, ans.Verdict))
	for _, r := range ans.Receipts {
		d.say("ledger", fmt.Sprintf("  receipt %s: fence %d segment %d, payload %s, accepted %s (%s)",
			r.ID(), r.FenceToken, r.SegmentSeq, r.PayloadDigest.String()[:19]+"…", r.AcceptedAt.UTC().Format("15:04:05.000Z"), r.Mode))
	}
	return nil
}

func (d *demo) startWorker(ctx context.Context, name, ledgerURL, resource, value string, ttlMs uint64, leaseOnly, hold bool) (*child, error) {
	id := "worker-" + strings.ToLower(name)
	args := []string{"demo", "worker", "--name", name, "--registry", d.registry, "--ledger", ledgerURL,
		"--token", d.tokens[id], "--resource", resource, "--op", "settle-" + strings.ToLower(name),
		"--ttl-ms", fmt.Sprint(ttlMs), "--wait-ms", "15000"}
	if !hold { // B settles in two ordered segments: the rows, then the total
		args = append(args, "--set", demoRowsKey+"=1000 rows settled by "+name, "--segments", "2")
	}
	args = append(args, "--set", demoKey+"="+value)
	if leaseOnly {
		args = append(args, "--lease-only")
	}
	if hold {
		args = append(args, "--hold")
	}
	return d.spawn(ctx, "worker "+name, hold, args...)
}

func (d *demo) verdict(fenced, unsafe storyResult) error {
	d.banner("RESULT")
	keptB := fenced.final.Value == fenced.bValue
	lostB := unsafe.final.Value != unsafe.bValue
	fmt.Fprintf(d.out, "fenced:     worker A's late write: %s: %s\n", fenced.aOutcome, fenced.aReason)
	fmt.Fprintf(d.out, "fenced:     ledger keeps %q by %s (fence %d): B's result intact=%t\n", fenced.final.Value, fenced.final.Writer, fenced.final.Fence, keptB)
	landed := "did not land"
	if unsafe.aOutcome == "ACCEPTED" {
		landed = "landed"
	}
	fmt.Fprintf(d.out, "lease-only: worker A's late write %s (nothing checked it)\n", landed)
	fmt.Fprintf(d.out, "lease-only: ledger holds %q by %s: B's result overwritten=%t\n", unsafe.final.Value, unsafe.final.Writer, lostB)
	if keptB && lostB && fenced.aOutcome == "STALE_OWNER" {
		fmt.Fprintf(d.out, "VERDICT: PASS in %.1fs: the gate rejected the stale owner and kept B's result; lease-only protection lost it\n", time.Since(d.start).Seconds())
		return nil
	}
	fmt.Fprintln(d.out, "VERDICT: FAIL")
	return errors.New("the demo did not show the expected outcome (see above)")
}

func (d *demo) banner(s string) { fmt.Fprintf(d.out, "\n=== %s ===\n", s) }

// say prints one timeline line.
func (d *demo) say(who, msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, "t+%5.2fs  %-9s %s\n", time.Since(d.start).Seconds(), who, msg)
}

func msDuration(ms uint64) time.Duration { return time.Duration(ms) * time.Millisecond }

// child is one process the demo started (internal/childproc runs it);
// its events go on the demo's timeline.
type child struct {
	*childproc.Proc
	d *demo
}

// spawn starts `self args...`. With stdin, the child's stdin is a pipe.
func (d *demo) spawn(ctx context.Context, name string, stdin bool, args ...string) (*child, error) {
	d.mu.Lock()
	logName := fmt.Sprintf("%02d-%s.log", len(d.children)+1, strings.ReplaceAll(name, " ", "-"))
	d.mu.Unlock()
	p, err := childproc.Start(name, d.self, args, stdin, filepath.Join(d.dir, logName))
	if err != nil {
		return nil, err
	}
	c := &child{Proc: p, d: d}
	d.mu.Lock()
	d.children = append(d.children, c)
	d.mu.Unlock()
	return c, nil
}

// waitLine waits for a stdout line matching re and returns its first group.
func (c *child) waitLine(ctx context.Context, re *regexp.Regexp, timeout time.Duration) (group string, err error) {
	err = c.WaitFor(ctx, timeout, "its ready line", func(l string) (bool, error) {
		m := re.FindStringSubmatch(l)
		if m != nil {
			group = m[1]
		}
		return m != nil, nil
	})
	return group, err
}

// waitEvent prints the worker's events on the timeline until one of the
// given kinds arrives, and returns it.
func (c *child) waitEvent(ctx context.Context, kinds ...string) (e ledger.Event, err error) {
	err = c.WaitFor(ctx, demoStepTimeout, fmt.Sprint("an event ", kinds), func(l string) (bool, error) {
		e = ledger.Event{}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			c.d.say(c.Name, l)
			return false, nil
		}
		c.d.say(c.Name, e.Msg)
		if e.Kind == "failed" {
			return true, fmt.Errorf("%s failed: %s", c.Name, e.Msg)
		}
		return slices.Contains(kinds, e.Kind), nil
	})
	return e, err
}

// freeze stops the process for real (SIGSTOP), then queues the line that
// releases its hold, which it can only read once it is resumed.
func (c *child) freeze() error {
	if err := c.Freeze(); err != nil {
		return err
	}
	_, err := io.WriteString(c.Stdin, "go\n")
	return err
}

func (c *child) thaw() error { return c.Thaw() }

// stopAll resumes and terminates every child still running, gracefully
// first (serve shuts its embedded etcd down cleanly).
func (d *demo) stopAll() {
	d.mu.Lock()
	ps := make([]*childproc.Proc, len(d.children))
	for i, c := range d.children {
		ps[i] = c.Proc
	}
	d.mu.Unlock()
	childproc.StopAll(ps, 5*time.Second)
}

func newDemoLedgerCmd() *cobra.Command {
	var o ledger.ServeOptions
	c := &cobra.Command{
		Use:   "ledger --db DB --token-file FILE (--trust-bundle FILE | --lease-only)",
		Short: "the example ledger service (a protected service writing through the gate)",
		RunE: func(c *cobra.Command, _ []string) error {
			if o.DB == "" || o.TokenFile == "" || (o.TrustBundle == "" && !o.LeaseOnly) {
				return usagef("--db, --token-file and --trust-bundle (or --lease-only) are required")
			}
			return ledger.Serve(c.Context(), o, c.OutOrStdout())
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:0", "address to serve on")
	fs.StringVar(&o.DB, "db", "", "SQLite file, or a postgres://… URL (required)")
	fs.StringVar(&o.TrustBundle, "trust-bundle", "", "the registry's trust bundle (required unless --lease-only)")
	fs.StringVar(&o.TokenFile, "token-file", "", "bearer tokens → identities, as for serve (required)")
	fs.BoolVar(&o.LeaseOnly, "lease-only", false, "negative control: no gate, every authenticated write lands")
	fs.StringVar(&o.TrustBundleURL, "trust-bundle-url", "", "a registry to poll for newer signed trust bundles (written back to --trust-bundle)")
	fs.DurationVar(&o.TrustBundleInterval, "trust-bundle-interval", 0, "how often to poll --trust-bundle-url (0: 30s)")
	fs.StringSliceVar(&o.Admins, "admin", nil, "identity allowed at the gate's admin endpoint /v1/gate/ (fencegate gate --gate URL); repeatable")
	fs.StringVar(&o.Report.URL, "report-to", "", "a registry whose dashboard gets this gate's state (gate/report)")
	fs.StringVar(&o.Report.Token, "report-token", "", "the ledger's bearer token at --report-to (a serve --gate-reporter identity)")
	fs.StringVar(&o.Report.Identity, "report-identity", "", "the ledger's identity at --report-to; with it, resumes confirmed on the dashboard are applied")
	fs.Uint64Var(&o.Report.IntervalMs, "report-interval-ms", 0, "time between reports (0: 2000; at least 500)")
	return c
}

func newDemoWorkerCmd() *cobra.Command {
	var o ledger.WorkerOptions
	var sets []string
	c := &cobra.Command{
		Use:   "worker --registry URL --ledger URL --token TOKEN --resource R --set KEY=VALUE...",
		Short: "one example worker: acquire, write through the ledger's gate, release",
		RunE: func(c *cobra.Command, _ []string) error {
			for _, s := range sets {
				k, v, ok := strings.Cut(s, "=")
				if !ok {
					return usagef("--set %q: want KEY=VALUE", s)
				}
				o.Entries = append(o.Entries, ledger.Entry{Key: k, Value: v})
			}
			if o.Registry == "" || o.Ledger == "" || o.Token == "" || o.Resource == "" || len(o.Entries) == 0 {
				return usagef("--registry, --ledger, --token, --resource and --set are required")
			}
			return ledger.WorkerProcess(c.Context(), o, os.Stdin, c.OutOrStdout())
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.Name, "name", "A", "name shown in events")
	fs.StringVar(&o.Registry, "registry", "", "registry URL (required)")
	fs.StringVar(&o.Ledger, "ledger", "", "ledger URL (required)")
	fs.StringVar(&o.Token, "token", "", "bearer token of this worker's identity, for both (required)")
	fs.StringVar(&o.Resource, "resource", "", "resource to lease (required)")
	fs.StringVar(&o.OperationID, "op", "settle", "operation ID")
	fs.StringArrayVar(&sets, "set", nil, "KEY=VALUE to write (repeatable)")
	fs.IntVar(&o.Segments, "segments", 1, "cut the entries into this many ordered segments")
	fs.Uint64Var(&o.TTLMs, "ttl-ms", demoTTLMsSuccessor, "lease TTL in ms")
	fs.Uint64Var(&o.WaitMs, "wait-ms", 0, "queue behind the current holder at most this long")
	fs.BoolVar(&o.LeaseOnly, "lease-only", false, "negative control: write without an envelope")
	fs.BoolVar(&o.HoldOnStdin, "hold", false, "wait for a line on stdin before sending the first write")
	return c
}
