//go:build unix

// A world of real processes for the stories that matter to a first-hour
// user — serve, the example ledger behind its gate, and workers running
// under fencegate lock or fencegate elect — and the child that writes to
// the ledger the way any program would under those wrappers: it takes the
// write's envelope from the lock's helper, and can be frozen with the
// envelope in hand. The stories themselves are in elect_test.go and
// break_test.go.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client/lockexec"
	"github.com/fencegate/fencegate/demo/ledger"
	"github.com/fencegate/fencegate/gate"
)

// The story world's identities and their tokens (serve's and the
// ledger's: the gate checks that the writer is the grant's owner).
var storyTokens = map[string]string{
	"worker-a":  "story-token-worker-a-0123",
	"worker-b":  "story-token-worker-b-0123",
	"ops-admin": "story-token-ops-admin-0123",
}

// envChild names the child the test binary plays (main_test.go).
const envChild = "FENCEGATE_TEST_CHILD"

// storyKey is the ledger row every writer sets.
const storyKey = "report/total"

type storyWorld struct {
	t                   *testing.T
	registry, ledgerURL string
	leaseOnly           bool
}

// newStoryWorld starts serve (admin ops-admin, TTLs down to 1 s) and a
// fenced ledger on the registry's trust bundle; with leaseOnly, a ledger
// without its gate (the negative control: every write lands).
func newStoryWorld(t *testing.T, leaseOnly bool) *storyWorld {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	var lines strings.Builder
	for id, tok := range storyTokens {
		fmt.Fprintf(&lines, "%s %s\n", tok, id)
	}
	if err := os.WriteFile(tokens, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := startProc(t, "serve", "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0",
		"--token-file", tokens, "--unsafe-no-fsync", "--authz-open", "--admin", "ops-admin")
	w := &storyWorld{t: t, registry: serve.waitOutput(t, listenLine), leaseOnly: leaseOnly}
	gateFlag := []string{"--trust-bundle", filepath.Join(dir, "data", "trust-bundle.json")}
	if leaseOnly {
		gateFlag = []string{"--lease-only"}
	}
	led := startProc(t, append([]string{"demo", "ledger", "--db", filepath.Join(dir, "ledger.db"), "--token-file", tokens}, gateFlag...)...)
	w.ledgerURL = led.waitOutput(t, regexp.MustCompile(`ledger: listening on (http://[^,\s]+)`))
	return w
}

// writer starts `fencegate <verb> RESOURCE <flags> -- <the test binary as
// a ledger writer>` as identity, setting storyKey to value; with hold, the
// writer stops with its envelope in hand until a line on its stdin.
func (w *storyWorld) writer(identity, verb, resource, value string, hold bool, flags ...string) (*proc, io.WriteCloser) {
	w.t.Helper()
	args := append([]string{verb, resource, "--registry", w.registry, "--token", storyTokens[identity]}, flags...)
	p := startProcWith(w.t, func(env []string) []string {
		return append(env, envChild+"=ledger-write", "LEDGER_URL="+w.ledgerURL, "LEDGER_TOKEN="+storyTokens[identity],
			"LEDGER_VALUE="+value, "LEDGER_HOLD="+strconv.FormatBool(hold), "LEDGER_LEASE_ONLY="+strconv.FormatBool(w.leaseOnly))
	}, append(args, "--", os.Args[0])...)
	return p, p.stdin
}

// value reads storyKey from the ledger.
func (w *storyWorld) value() string {
	w.t.Helper()
	c := &ledger.Client{Base: w.ledgerURL, Token: storyTokens["worker-a"]}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, found, err := c.Value(ctx, storyKey)
	if err != nil || !found {
		w.t.Fatalf("ledger value: found %v, %v", found, err)
	}
	return v.Value
}

// freeze stops (or, with SIGCONT, resumes) the wrapper's process group
// and its child's: the whole worker, as a pause of its machine would. It
// resumes the child first: a wrapper resumed first may find its lease
// gone and end its child's group before the second signal is sent (seen
// under load: "signal continued to group N: no such process"), and the
// child with its write in hand is what a story thaws.
func freeze(t *testing.T, wrapper *proc, childPid int, sig syscall.Signal) {
	t.Helper()
	groups := []int{wrapper.cmd.Process.Pid, childPid}
	if sig == syscall.SIGCONT {
		groups[0], groups[1] = groups[1], groups[0]
	}
	for _, pgid := range groups {
		if err := syscall.Kill(-pgid, sig); err != nil {
			t.Fatalf("signal %v to group %d: %v", sig, pgid, err)
		}
	}
}

// thawLateWriter resumes the frozen writer a with its write in hand (a
// line on in sends it the moment it wakes) and checks how the story ends:
// with the lease alone (the control) its late write lands over the ledger
// and thawLateWriter returns false; fenced, the gate refuses it
// STALE_OWNER, the ledger holds want, and it returns true. who names the
// writer in a failure.
func (w *storyWorld) thawLateWriter(a *proc, in io.Writer, child int, who, want string) bool {
	w.t.Helper()
	fmt.Fprintln(in)
	freeze(w.t, a, child, syscall.SIGCONT)
	a.waitOutput(w.t, regexp.MustCompile(`outcome (\S+)`))
	if w.leaseOnly {
		if got := w.value(); got != "100 (by A, before its pause)" {
			w.t.Fatalf("without the gate the ledger holds %q: the story does not show what the gate prevents", got)
		}
		return false
	}
	if !strings.Contains(a.out.String(), "outcome STALE_OWNER") {
		w.t.Fatalf("%s's write was not refused as STALE_OWNER:\n%s%s", who, a.out, a.err)
	}
	if got := w.value(); got != want {
		w.t.Fatalf("the ledger holds %q, want %q", got, want)
	}
	return true
}

var childLine = regexp.MustCompile(`envelope fence=(\d+) pid=(\d+)`)

// childPid waits for the writer's child to report its envelope and pid.
func childPid(t *testing.T, p *proc) (fence uint64, pid int) {
	t.Helper()
	m := p.waitOutputAll(t, childLine)
	f, _ := strconv.ParseUint(m[1], 10, 64)
	pid, _ = strconv.Atoi(m[2])
	return f, pid
}

// ledgerWriteChild is the child a story's writer runs: it takes the
// envelope for one write from the lock's helper, prints its fence and
// pid, waits for a line on stdin when told to hold (frozen there, it is
// the worker with its write in hand), then writes, prints the gate's
// answer and settles it. It ignores SIGTERM, as a process that paused
// past its lease never sees the wrapper's: what stops its late write is
// the gate.
func ledgerWriteChild() int {
	signal.Ignore(syscall.SIGTERM)
	entries := []ledger.Entry{{Key: storyKey, Value: os.Getenv("LEDGER_VALUE")}}
	digest := ledger.PayloadDigest(entries)
	hc := lockexec.HelperClient(os.Getenv(lockexec.EnvEnvelopeSocket))
	q := url.Values{"seq": {"1"}, "payloadDigest": {digest.String()}}
	member := "" // under a lock set, the write goes to its first member's gate
	if set := strings.Fields(os.Getenv(lockexec.EnvLockSet)); len(set) > 0 {
		member = set[0]
		q.Set("resource", member)
	}
	resp, err := hc.Get("http://lock" + lockexec.EnvelopePath + "?" + q.Encode())
	if err != nil {
		fmt.Println("no envelope:", err)
		return 3
	}
	var m gate.Mutation
	err = json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		fmt.Println("no envelope:", resp.Status, err)
		return 3
	}
	fmt.Printf("envelope fence=%d pid=%d resource=%s\n", m.FenceToken, os.Getpid(), m.Resource)
	if os.Getenv("LEDGER_HOLD") == "true" {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	}
	c := &ledger.Client{Base: os.Getenv("LEDGER_URL"), Token: os.Getenv("LEDGER_TOKEN")}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mutation := &m
	if os.Getenv("LEDGER_LEASE_ONLY") == "true" {
		mutation = nil // a lease-only ledger takes no envelope: the negative control
	}
	_, err = c.Write(ctx, mutation, entries)
	outcome := gate.OutcomeOf(err)
	fmt.Printf("outcome %s\n", outcome)
	if outcome != "" {
		body := fmt.Sprintf(`{"resource":%q,"seq":1,"outcome":%q}`, member, outcome)
		if r, err := hc.Post("http://lock"+lockexec.SettlePath, "application/json", strings.NewReader(body)); err == nil {
			r.Body.Close()
		}
	}
	return 0
}
