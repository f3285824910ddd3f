//go:build unix

// Proves that switching the coordination backend and back, with a
// fence-range bump at each switch, pauses nothing and lets nothing stale
// in, with real processes: serve, the example ledger behind its gate
// (SQLite), workers under `fencegate lock` writing through it, two
// external etcd servers and a ZooKeeper server. serve moves from its
// embedded etcd to etcd A (records copied with registry export and
// import), to etcd B (nothing copied), to ZooKeeper (copied), and back to
// etcd B (the rollback; B's records are the old ones). Two workers are
// frozen with their write's envelope in hand across a switch (the copied
// one, and the rollback); thawed, their late writes are rejected as
// STALE_OWNER. Every write of every phase is accepted at a fence above
// the last one, the gate records no pause and no alarm, and after each
// switch every resource's next fence at the registry is above the gate's
// highest. The negative control switches once more without the bump
// (back to etcd A): the gate pauses on FENCE_REGRESSION, and the same
// checks see it.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gateadmin"
	"github.com/fencegate/fencegate/testkit/etcdtest"
	"github.com/fencegate/fencegate/testkit/zktest"
)

// switchResources are the resources the workers write, one write each
// per phase.
var switchResources = []string{"switch/r0", "switch/r1", "switch/r2"}

// switchWorld is serve on one --data-dir (its signing key and trust
// bundle stay; only the store changes), the ledger and the tally of
// every write.
type switchWorld struct {
	*storyWorld
	data, addr, tokens, db string
	serve                  *proc
	// lastAccepted is the fence of the last write the gate accepted, per
	// resource; a later acceptance at or below it is a stale accept.
	lastAccepted map[string]uint64
	pauses       []string // writes answered FENCE_REGRESSION or RESOURCE_PAUSED
	staleAccepts []string
}

func newSwitchWorld(t *testing.T) *switchWorld {
	t.Helper()
	dir := t.TempDir()
	w := &switchWorld{data: filepath.Join(dir, "data"), addr: freeAddr(t), tokens: filepath.Join(dir, "tokens"),
		db: filepath.Join(dir, "ledger.db"), lastAccepted: map[string]uint64{}}
	var lines strings.Builder
	for id, tok := range storyTokens {
		fmt.Fprintf(&lines, "%s %s\n", tok, id)
	}
	if err := os.WriteFile(w.tokens, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	w.storyWorld = &storyWorld{t: t, registry: "http://" + w.addr}
	w.startServe() // the embedded etcd: the trust bundle the ledger needs
	led := startProc(t, "demo", "ledger", "--db", w.db, "--token-file", w.tokens, "--trust-bundle", filepath.Join(w.data, "trust-bundle.json"))
	w.ledgerURL = led.waitOutput(t, regexp.MustCompile(`ledger: listening on (http://[^,\s]+)`))
	return w
}

// startServe starts serve on the world's data dir and address, on the
// store the flags name (none: the embedded etcd).
func (w *switchWorld) startServe(store ...string) {
	w.t.Helper()
	args := append([]string{"serve", "--data-dir", w.data, "--listen", w.addr, "--token-file", w.tokens,
		"--unsafe-no-fsync", "--authz-open", "--admin", "ops-admin"}, store...)
	w.serve = startProc(w.t, args...)
	w.serve.waitOutput(w.t, listenLine)
}

// phase has a worker write each resource once, all at once, and tallies
// the answers.
func (w *switchWorld) phase(name string) {
	w.t.Helper()
	writers := make([]*proc, len(switchResources))
	for i, res := range switchResources {
		writers[i], _ = w.writer("worker-a", "lock", res, name+" "+res, false, "--ttl", "10s")
	}
	for i, p := range writers {
		fence, _ := childPid(w.t, p)
		outcome := p.waitOutput(w.t, regexp.MustCompile(`outcome (\S+)`))
		w.tally(name, switchResources[i], fence, outcome)
		p.wait(w.t, "writer")
	}
}

// tally records one write's answer: a pause, a stale accept, or (any
// other refusal in a phase) a failure.
func (w *switchWorld) tally(phase, res string, fence uint64, outcome string) {
	w.t.Helper()
	what := fmt.Sprintf("%s: %s fence %d: %s", phase, res, fence, outcome)
	switch gate.Outcome(outcome) {
	case gate.Accepted:
		if fence <= w.lastAccepted[res] {
			w.staleAccepts = append(w.staleAccepts, fmt.Sprintf("%s (after %d)", what, w.lastAccepted[res]))
		}
		w.lastAccepted[res] = max(w.lastAccepted[res], fence)
	case gate.FenceRegression, gate.ResourcePaused:
		w.pauses = append(w.pauses, what)
	default:
		w.t.Errorf("%s: a worker's write refused", what)
	}
}

// freezeWorker starts worker-b on res with its envelope in hand and
// freezes it (SIGSTOP, wrapper and child); thaw sends its write.
func (w *switchWorld) freezeWorker(res string) (fence uint64, thaw func() string) {
	w.t.Helper()
	p, in := w.writer("worker-b", "lock", res, "late write by the frozen worker", true, "--ttl", "60s")
	fence, child := childPid(w.t, p)
	freeze(w.t, p, child, syscall.SIGSTOP)
	return fence, func() string {
		fmt.Fprintln(in)
		freeze(w.t, p, child, syscall.SIGCONT)
		return p.waitOutput(w.t, regexp.MustCompile(`outcome (\S+)`))
	}
}

// switchTo stops serve, runs each operator command on the stopped
// store(s), and starts serve on the new store.
func (w *switchWorld) switchTo(store []string, commands ...[]string) {
	w.t.Helper()
	stopProc(w.t, w.serve, "serve")
	for _, c := range commands {
		cli(w.t, 0, c...)
	}
	w.startServe(store...)
}

// gateStatus reads res's state at the gate from the ledger's database,
// as `fencegate gate status --db` does.
func (w *switchWorld) gateStatus(res string) gateadmin.Status {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := gateadmin.OpenLocal(ctx, w.db, "", "")
	if err != nil {
		w.t.Fatal(err)
	}
	defer l.DB.Close()
	st, err := l.Status(ctx, res)
	if err != nil {
		w.t.Fatal(err)
	}
	return st
}

// checkAboveGate fails unless every resource's next fence at the
// registry is above its highest fence at the gate, and the gate has not
// paused it nor raised an alarm.
func (w *switchWorld) checkAboveGate(after string) {
	w.t.Helper()
	rc, err := httpclient.NewClient(w.registry, httpclient.WithBearerToken(storyTokens["ops-admin"]))
	if err != nil {
		w.t.Fatal(err)
	}
	for _, res := range switchResources {
		st := w.gateStatus(res)
		info, err := rc.Resource(context.Background(), res)
		if err != nil {
			w.t.Fatalf("after %s: %s at the registry: %v", after, res, err)
		}
		if info.NextFence <= st.HighestFence {
			w.t.Errorf("after %s: %s's next fence %d is not above the gate's highest %d", after, res, info.NextFence, st.HighestFence)
		}
		if st.Paused || len(st.Alarms) > 0 {
			w.t.Errorf("after %s: %s at the gate: paused %v (%s), alarms %+v", after, res, st.Paused, st.PausedReason, st.Alarms)
		}
	}
}

// etcdFlags names e as serve's store (the password comes from
// FENCEGATE_ETCD_PASSWORD).
func etcdFlags(e *etcdtest.External) []string {
	return []string{"--etcd-endpoints", e.Endpoint, "--etcd-prefix", etcdtest.Prefix, "--etcd-cacert", e.PKI.CAFile,
		"--etcd-cert", e.PKI.ClientCert, "--etcd-key", e.PKI.ClientKey, "--etcd-user", etcdtest.User}
}

// bumpCmd is `fencegate fence-range bump` on the store the flags name.
func bumpCmd(note string, store []string, extra ...string) []string {
	return append(append([]string{"fence-range", "bump", "--note", note}, store...), extra...)
}

func TestSwitchBackendAndBack(t *testing.T) {
	// ZooKeeper's JVM starts while the etcd servers do.
	zkc := make(chan *zktest.Server, 1)
	zkErr := make(chan error, 1)
	if err := zktest.Available(); err != nil {
		zktest.SkipOrFail(t, err)
	}
	go func() {
		s, err := zktest.New(t.TempDir(), zktest.Options{})
		zkc <- s
		zkErr <- err
	}()
	etcdA, etcdB := etcdtest.Start(t), etcdtest.Start(t)
	zk := <-zkc
	if err := <-zkErr; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zk.Stop() })
	t.Setenv("FENCEGATE_ETCD_PASSWORD", etcdtest.Password)
	storeA, storeB, storeZK := etcdFlags(etcdA), etcdFlags(etcdB), []string{"--zookeeper", zk.Addr}
	dir := t.TempDir()
	started := time.Now()

	w := newSwitchWorld(t)
	w.phase("embedded etcd")
	w.phase("embedded etcd, again")
	_, thawFirst := w.freezeWorker(switchResources[0])

	// Embedded → etcd A, records copied.
	exportA := filepath.Join(dir, "embedded.jsonl")
	w.switchTo(storeA,
		[]string{"registry", "export", "--data-dir", w.data, "--out", exportA},
		append([]string{"registry", "import", "--in", exportA}, storeA...),
		bumpCmd("test: embedded → etcd A, copied", storeA))
	w.checkAboveGate("embedded → etcd A")
	w.phase("etcd A")
	if got := thawFirst(); got != string(gate.StaleOwner) || strings.HasPrefix(w.value(), "late write") {
		t.Errorf("the worker frozen across the copied switch: %s (the ledger holds %q), want STALE_OWNER", got, w.value())
	}

	// etcd A → etcd B, nothing copied: the clock orders the bumps.
	w.switchTo(storeB, bumpCmd("test: etcd A → etcd B, nothing copied", storeB))
	w.checkAboveGate("etcd A → etcd B")
	w.phase("etcd B")

	// etcd B → ZooKeeper, copied.
	exportZK := filepath.Join(dir, "etcd-b.jsonl")
	w.switchTo(storeZK,
		append([]string{"registry", "export", "--out", exportZK}, storeB...),
		append([]string{"registry", "import", "--in", exportZK}, storeZK...),
		bumpCmd("test: etcd B → ZooKeeper, copied", storeZK))
	w.checkAboveGate("etcd B → ZooKeeper")
	w.phase("ZooKeeper")
	_, thawSecond := w.freezeWorker(switchResources[1])

	// The rollback: ZooKeeper → etcd B, whose records are from before;
	// the bump goes above the range ZooKeeper issued from, as the
	// runbook says (fence-range show on the store left behind).
	out, _ := cli(t, 0, append([]string{"fence-range", "show"}, storeZK...)...)
	last := regexp.MustCompile(`bump there with --above (\d+)`).FindStringSubmatch(out)
	if last == nil {
		t.Fatalf("fence-range show on ZooKeeper:\n%s", out)
	}
	w.switchTo(storeB, bumpCmd("test: rollback to etcd B", storeB, "--above", last[1]))
	w.checkAboveGate("the rollback to etcd B")
	w.phase("etcd B, after the rollback")
	if got := thawSecond(); got != string(gate.StaleOwner) || strings.HasPrefix(w.value(), "late write") {
		t.Errorf("the worker frozen across the rollback: %s (the ledger holds %q), want STALE_OWNER", got, w.value())
	}
	w.phase("etcd B, after the late write")
	w.checkAboveGate("the last phase")
	lastGrants := time.Now()

	if len(w.pauses) > 0 || len(w.staleAccepts) > 0 {
		t.Fatalf("pauses %q, stale accepts %q", w.pauses, w.staleAccepts)
	}
	t.Logf("4 switches, 7 phases, 2 frozen workers: 0 pauses, 0 stale accepts (%s)", time.Since(started).Round(100*time.Millisecond))

	// The negative control: back to etcd A without the bump. A still
	// issues from its old range, below the gate's highest: the gate
	// pauses on FENCE_REGRESSION, and the tally and the gate show it.
	// The regression rule needs its evidence outside the skew bound
	// (serve's default, 500 ms) of the grants at the gate's highest: a
	// switch takes longer than that, but on a fast machine it need not.
	w.switchTo(storeA)
	time.Sleep(time.Until(lastGrants.Add(time.Second)))
	w.phase("etcd A, no bump")
	if len(w.pauses) != len(switchResources) || !strings.Contains(w.pauses[0], string(gate.FenceRegression)) {
		t.Fatalf("without the bump: pauses %q, want a FENCE_REGRESSION for every resource", w.pauses)
	}
	if st := w.gateStatus(switchResources[0]); !st.Paused || len(st.Alarms) == 0 || st.Alarms[0].Kind != string(gate.AlarmRegression) {
		t.Fatalf("without the bump the gate has: paused %v, alarms %+v", st.Paused, st.Alarms)
	}
}
