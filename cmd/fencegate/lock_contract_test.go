//go:build unix

// Runs the contract of `fencegate lock` and `fencegate elect` with their
// child (lock_contract.go) as real processes: for every way a run ends
// (the child exits 0 or 3 or is killed, the wrapper and child frozen past
// the lease, a break, the registry killed or frozen, the wrapper killed
// -9 or told to stop) at the registry's shortest TTL, a typical one and a
// long one, it measures the wrapper's exit status, the fate of the child
// and of the grandchild it started, when the child got SIGTERM against
// the lease's local deadline, and when the next waiter's child started
// against the registry's deadline, and checks each against the row the
// help and docs/operations.md print. Rows run concurrently; a long-TTL
// row that would wait its whole lease out runs only in the full form
// (FENCEGATE_CONTRACT_FULL=1 go test -run TestLockContract ./cmd/fencegate).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/client/lockexec"
)

// envContractFull runs the long-TTL rows that wait their lease out.
const envContractFull = "FENCEGATE_CONTRACT_FULL"

// The TTLs of the table: the shortest (serve's default --ttl-min-ms, and
// the shortest the client's margins allow: client.TTLMin), a typical one,
// and a long one.
var contractTTLs = []struct {
	name string
	ttl  time.Duration
}{{"min", client.TTLMin(client.Options{})}, {"typical", 5 * time.Second}, {"long", 30 * time.Second}}

// contractLockDelay is serve's default lock-delay after an expiry.
const contractLockDelay = time.Second

// errLostEarly: the holder's lease was lost before the row's event (a
// short lease on a machine too loaded to renew it in time: the loss
// itself is reported as it should be, but the row did not happen).
var errLostEarly = errors.New("the holder's lease was lost before the event")

// contractAttemptsMax is how many times a row lost early is tried.
const contractAttemptsMax = 3

// contractRowsMax is how many rows run at once: each is two wrappers,
// their guardians and children, and for the registry rows a serve.
const contractRowsMax = 12

// contractChild is the holder's child: it logs its pid, its envelope
// socket and the grandchild it starts, logs the instant it gets SIGTERM,
// then exits 0 or dies of it (CONTRACT_ON_TERM), and exits
// CONTRACT_EXIT on SIGUSR1.
const contractChild = `now() { date +%s%N; }
echo "start $$ $(now) $FENCEGATE_ENVELOPE_SOCKET" >> "$CONTRACT_LOG"
sleep 300 &
echo "grandchild $!" >> "$CONTRACT_LOG"
if [ "$CONTRACT_ON_TERM" = die ]; then
  trap 'echo "term $(now)" >> "$CONTRACT_LOG"; trap - TERM; kill -TERM $$' TERM
else
  trap 'echo "term $(now)" >> "$CONTRACT_LOG"; exit 0' TERM
fi
trap 'exit $CONTRACT_EXIT' USR1
while :; do sleep 1 & wait $!; done`

// contractNext is the next waiter's child: it logs when it starts.
const contractNext = `echo "start $$ $(date +%s%N)" >> "$CONTRACT_LOG"`

// contractCase is one row as run: a verb, a TTL and an event.
type contractCase struct {
	verb, ttlName string
	ttl           time.Duration
	event         string
	onTerm        string // the child's answer to SIGTERM: "exit0" or "die"
	exitCode      int    // the child's exit on SIGUSR1
	full          bool   // waits its whole lease out: full form only at the long TTL
}

func (c contractCase) name() string { return c.verb + "/" + c.ttlName + "/" + c.event }

// contractEvents says, for each event, how the child answers SIGTERM and
// whether the row waits the lease out. The lost-lease rows alternate the
// child's answer so both of the help's promises are met: 1 when it then
// exits 0, 143 when SIGTERM ends it.
var contractEvents = []struct {
	event, onTerm string
	exitCode      int
	waitsLease    bool
}{
	{evExit0, "die", 0, false}, {evExit3, "die", 3, false}, {evSignal, "die", 0, false},
	{evFrozen, "exit0", 0, true}, {evBreak, "die", 0, false}, {evRegistryKill, "exit0", 0, false},
	{evRegistryStop, "die", 0, false}, {evWrapperKill, "die", 0, true},
	{evWrapperSIGINT, "die", 0, false}, {evWrapperTERM, "die", 0, false},
}

// envContractOnly keeps the rows whose name (verb/ttl/event) contains it:
// FENCEGATE_CONTRACT_ONLY=lock/typical/ runs one column of the table.
const envContractOnly = "FENCEGATE_CONTRACT_ONLY"

// contractCases is the table: lock at every TTL, elect at the typical and
// shortest ones (every TTL in the full form).
func contractCases() []contractCase {
	full := os.Getenv(envContractFull) == "1"
	var out []contractCase
	for _, verb := range []string{"lock", "elect"} {
		for _, tt := range contractTTLs {
			if verb == "elect" && tt.name == "long" && !full {
				continue
			}
			for _, e := range contractEvents {
				if e.event == evFrozen && tt.name == "long" && !full {
					continue // it would wait its whole lease out
				}
				out = append(out, contractCase{verb: verb, ttlName: tt.name, ttl: tt.ttl, event: e.event, onTerm: e.onTerm,
					exitCode: e.exitCode, full: full || !(e.waitsLease && tt.name == "long")})
				if only := os.Getenv(envContractOnly); only != "" && !strings.Contains(out[len(out)-1].name(), only) {
					out = out[:len(out)-1]
				}
			}
		}
	}
	return out
}

// contractOutcome is what one row measured.
type contractOutcome struct {
	exit                     int            // the holder wrapper's status; -1 killed
	exitSignal               syscall.Signal // the signal that killed it, if any
	term                     time.Time      // the child's SIGTERM, zero if none
	event, thaw              time.Time      // the event; when what it froze ran again
	localDeadline, regExpiry time.Time      // the last seen before the event
	nextStart                time.Time      // the next waiter's child, zero if not seen
	treeGone                 bool           // child and grandchild gone when checked
	treeGoneAfter            time.Duration  // for a killed wrapper: from the kill
	stderr                   string         // the holder's wrapper's
	notes                    []string
}

func TestLockContract(t *testing.T) {
	shared := newContractRegistry(t, false)
	cases := contractCases()
	outcomes := make([]*contractOutcome, len(cases))
	errs := make([]error, len(cases))
	sem := make(chan struct{}, contractRowsMax)
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			reg := shared
			if c.event == evRegistryKill || c.event == evRegistryStop {
				reg = newContractRegistry(t, true)
			}
			for attempt := 1; attempt <= contractAttemptsMax; attempt++ {
				outcomes[i], errs[i] = runContractRow(t, reg, c, fmt.Sprintf("contract/%d-%d", i, attempt))
				if !errors.Is(errs[i], errLostEarly) {
					break
				}
				t.Logf("%s: attempt %d: %v", c.name(), attempt, errs[i])
			}
		}()
	}
	wg.Wait()
	t.Logf("%d rows in %s", len(cases), time.Since(start).Round(100*time.Millisecond))
	var table strings.Builder
	for i, c := range cases {
		if errs[i] != nil {
			t.Errorf("%s: %v", c.name(), errs[i])
			continue
		}
		problems := checkContractRow(c, outcomes[i])
		for _, p := range problems {
			t.Errorf("%s: %s", c.name(), p)
		}
		verdict := "ok"
		if len(problems) > 0 {
			verdict = "FAIL"
		}
		fmt.Fprintf(&table, "%-4s %s\n", verdict, describeOutcome(c, outcomes[i]))
	}
	t.Logf("the contract as it ran:\n%s", table.String())
}

// contractRegistry is a serve the rows share, or a row's own (restart).
type contractRegistry struct {
	t    *testing.T
	url  string
	args []string
	mu   sync.Mutex
	p    *proc
}

// newContractRegistry starts serve; a private one listens on a fixed
// port so a restart keeps its URL.
func newContractRegistry(t *testing.T, private bool) *contractRegistry {
	dir := t.TempDir()
	listen := "127.0.0.1:0"
	if private {
		listen = freeAddr(t)
	}
	r := &contractRegistry{t: t, args: []string{"serve", "--data-dir", filepath.Join(dir, "data"), "--listen", listen,
		"--token-file", writeTokenFile(t, dir), "--unsafe-no-fsync", "--authz-open", "--admin", "worker-1"}}
	r.start()
	return r
}

func (r *contractRegistry) start() {
	p := startProc(r.t, r.args...)
	url := p.waitOutput(r.t, listenLine)
	r.mu.Lock()
	r.p, r.url = p, url
	r.mu.Unlock()
}

func (r *contractRegistry) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p.cmd.Process.Pid
}

// contractEnv gives a wrapper's child its log and its answers.
func contractEnv(log, onTerm string, exitCode int) func([]string) []string {
	return func(env []string) []string {
		return append(env, "CONTRACT_LOG="+log, "CONTRACT_ON_TERM="+onTerm, "CONTRACT_EXIT="+strconv.Itoa(exitCode))
	}
}

// wrapperArgs is the holder's (or the next waiter's) command line.
func wrapperArgs(c contractCase, url, resource, script string) []string {
	return []string{c.verb, resource, "--registry", url, "--token", lockToken, "--ttl", c.ttl.String(), "--grace", "2s", "--", "sh", "-c", script}
}

// contractRun is one row in flight.
type contractRun struct {
	c          contractCase
	reg        *contractRegistry
	resource   string
	a          *proc       // the holder's wrapper
	la         contractLog // its child's log, as it started
	logA, logB string
	started    time.Time // when the event began (a break's event is its end)
	o          contractOutcome
}

// runContractRow runs one row and returns what it measured. Its error is
// the harness's own trouble (a process that never started), not a
// breach of the contract.
func runContractRow(t *testing.T, reg *contractRegistry, c contractCase, resource string) (*contractOutcome, error) {
	dir := t.TempDir()
	r := &contractRun{c: c, reg: reg, resource: resource, logA: filepath.Join(dir, "a.log"), logB: filepath.Join(dir, "b.log")}
	r.a = startProcWith(t, contractEnv(r.logA, c.onTerm, c.exitCode), wrapperArgs(c, reg.url, resource, contractChild)...)
	var err error
	if r.la, err = waitChildLog(r.logA, "grandchild", 60*time.Second, r.a.done); err != nil {
		return nil, fmt.Errorf("holder: %w\n%s", err, r.a.err)
	}
	b := startProcWith(t, contractEnv(r.logB, "exit0", 0), wrapperArgs(c, reg.url, resource, contractNext)...)
	stop := watchDeadlines(reg.url, resource, r.la.socket, &r.o)
	err = waitQueued(reg.url, resource, 60*time.Second, r.lostEarly)
	time.Sleep(300 * time.Millisecond) // a renewal or two seen
	stop()
	if err != nil && !r.lostEarly() {
		return nil, fmt.Errorf("next waiter: %w\n%s", err, b.err)
	}
	if r.lostEarly() {
		return nil, fmt.Errorf("%w:\n%s", errLostEarly, r.a.err)
	}
	if err := r.inject(); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil, fmt.Errorf("%w: %v:\n%s", errLostEarly, err, r.a.err)
		}
		return nil, err
	}
	o, err := r.finish()
	if err == nil && !o.term.IsZero() && o.term.Before(r.started) {
		return nil, fmt.Errorf("%w: SIGTERM %s before it:\n%s", errLostEarly, r.started.Sub(o.term), o.stderr)
	}
	return o, err
}

// lostEarly reports whether the holder's child already got SIGTERM, or
// its wrapper already ended.
func (r *contractRun) lostEarly() bool {
	select {
	case <-r.a.done:
		return true
	default:
	}
	l, _ := readContractLog(r.logA)
	return !l.term.IsZero()
}

// inject makes the row's event happen and waits for what it must wait
// for (a thaw, a restart).
func (r *contractRun) inject() error {
	r.o.event, r.started = time.Now(), time.Now()
	switch r.c.event {
	case evExit0, evExit3:
		return syscall.Kill(r.la.pid, syscall.SIGUSR1)
	case evSignal:
		return syscall.Kill(r.la.pid, syscall.SIGKILL)
	case evFrozen:
		return r.freeze()
	case evBreak:
		_, errOut, code := runCLI("break", r.resource, "--registry", r.reg.url, "--token", lockToken, "--note", "contract test")
		r.o.event = time.Now()
		if code != 0 {
			return fmt.Errorf("break exited %d: %s", code, errOut)
		}
		return nil
	case evRegistryKill, evRegistryStop:
		return r.stopRegistry()
	case evWrapperKill:
		return r.killWrapper()
	case evWrapperSIGINT:
		return syscall.Kill(r.a.cmd.Process.Pid, syscall.SIGINT)
	case evWrapperTERM:
		return syscall.Kill(r.a.cmd.Process.Pid, syscall.SIGTERM)
	}
	return fmt.Errorf("no such event %q", r.c.event)
}

// freeze stops the wrapper and its child until the next waiter's child
// runs (in the short form at the long TTL the row is not run), then
// thaws them.
func (r *contractRun) freeze() error {
	groups := []int{r.a.cmd.Process.Pid, r.la.pid}
	for _, pg := range groups {
		if err := syscall.Kill(-pg, syscall.SIGSTOP); err != nil {
			return err
		}
	}
	r.waitNext(r.c.ttl + contractLockDelay + 10*time.Second)
	for _, pg := range groups {
		_ = syscall.Kill(-pg, syscall.SIGCONT)
	}
	r.o.thaw = time.Now()
	return nil
}

// stopRegistry kills or freezes the row's registry, waits for the
// holder's child to get SIGTERM, then restarts or thaws it.
func (r *contractRun) stopRegistry() error {
	sig := syscall.SIGKILL
	if r.c.event == evRegistryStop {
		sig = syscall.SIGSTOP
	}
	if err := syscall.Kill(r.reg.pid(), sig); err != nil {
		return err
	}
	_, werr := waitChildLog(r.logA, "term", r.c.ttl+5*time.Second, r.a.done)
	if r.c.event == evRegistryStop {
		_ = syscall.Kill(r.reg.pid(), syscall.SIGCONT)
	} else {
		r.reg.start()
	}
	r.o.thaw = time.Now()
	if werr != nil {
		r.o.notes = append(r.o.notes, "no SIGTERM while the registry was down")
	}
	return nil
}

// killWrapper sends SIGKILL to the holder's wrapper and measures how long
// its child's tree takes to go (-1: more than 3 s).
func (r *contractRun) killWrapper() error {
	if err := syscall.Kill(r.a.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return err
	}
	for time.Since(r.o.event) < 3*time.Second {
		if !procRunning(r.la.pid) && !procRunning(r.la.grandchild) {
			r.o.treeGoneAfter = time.Since(r.o.event)
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.o.treeGoneAfter = -1
	return nil
}

// finish waits for the holder's wrapper to exit and the next waiter's
// child to start, and reads the logs.
func (r *contractRun) finish() (*contractOutcome, error) {
	select {
	case <-r.a.done:
	case <-time.After(r.c.ttl + 40*time.Second):
		return nil, fmt.Errorf("the holder's wrapper did not exit:\n%s", r.a.err)
	}
	o := &r.o
	o.exit = r.a.code
	if ws, ok := r.a.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		o.exitSignal = ws.Signal()
	}
	o.treeGone = !procRunning(r.la.pid) && !procRunning(r.la.grandchild)
	if o.nextStart.IsZero() {
		wait := 5 * time.Second
		if r.c.event == evWrapperKill && !o.regExpiry.IsZero() {
			wait = max(wait, time.Until(o.regExpiry.Add(contractLockDelay+3*time.Second)))
		}
		if !r.c.full {
			wait = 2 * time.Second // the short form: only that it has not started yet
		}
		r.waitNext(wait)
	}
	if l, err := readContractLog(r.logA); err == nil {
		o.term = l.term
	}
	o.stderr = r.a.err.String()
	return o, nil
}

// waitNext waits up to d for the next waiter's child to start.
func (r *contractRun) waitNext(d time.Duration) {
	if l, err := waitChildLog(r.logB, "start", d, nil); err == nil {
		r.o.nextStart = l.start
	}
}

// contractLog is a child's log.
type contractLog struct {
	pid, grandchild int
	start, term     time.Time
	socket          string
}

func readContractLog(path string) (contractLog, error) {
	var l contractLog
	b, err := os.ReadFile(path)
	if err != nil {
		return l, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "start":
			l.pid, _ = strconv.Atoi(f[1])
			l.start = unixNano(f[2])
			if len(f) >= 4 {
				l.socket = f[3]
			}
		case len(f) == 2 && f[0] == "grandchild":
			l.grandchild, _ = strconv.Atoi(f[1])
		case len(f) == 2 && f[0] == "term":
			l.term = unixNano(f[1])
		}
	}
	return l, nil
}

func unixNano(s string) time.Time {
	n, _ := strconv.ParseInt(s, 10, 64)
	return time.Unix(0, n)
}

// waitChildLog waits up to d until the log at path has a line starting with
// word, or the process whose child writes it has exited (gone: nil for
// none).
func waitChildLog(path, word string, d time.Duration, gone <-chan struct{}) (contractLog, error) {
	deadline := time.Now().Add(d)
	for {
		l, _ := readContractLog(path)
		switch {
		case word == "start" && !l.start.IsZero(), word == "grandchild" && l.grandchild != 0, word == "term" && !l.term.IsZero():
			return l, nil
		case time.Now().After(deadline):
			return l, fmt.Errorf("no %q line in %s after %s", word, path, d)
		}
		select {
		case <-gone:
			gone = nil // one more look: the line may have come just before
			deadline = time.Now()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitQueued waits until resource has a waiter, or until gone says the
// holder is gone (then there is no queue to join).
func waitQueued(url, resource string, d time.Duration, gone func() bool) error {
	c, err := httpclient.NewClient(url, httpclient.WithBearerToken(lockToken))
	if err != nil {
		return err
	}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && !gone() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		v, err := c.LockStatus(ctx, resource)
		cancel()
		if err == nil && len(v.Waiters) > 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s has no waiter (after %s, or its holder is gone)", resource, d)
}

// watchDeadlines polls, until the returned stop is called, the holder's
// local deadline (its envelope helper) and the registry's expiry of the
// lease, keeping the last of each in o.
func watchDeadlines(url, resource, socket string, o *contractOutcome) (stop func()) {
	c, _ := httpclient.NewClient(url, httpclient.WithBearerToken(lockToken))
	hc := lockexec.HelperClient(socket)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			local, reg := pollDeadlines(c, hc, resource)
			if !local.IsZero() {
				o.localDeadline = local
			}
			if !reg.IsZero() {
				o.regExpiry = reg
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); <-finished }
}

// pollDeadlines reads the holder's local deadline and the registry's
// expiry once (zero when unanswered).
func pollDeadlines(c *httpclient.Client, hc *http.Client, resource string) (local, reg time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if v, err := c.LockStatus(ctx, resource); err == nil && v.Holder != nil {
		reg = v.Holder.ExpiresAt
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://lock"+lockexec.LeasePath, nil)
	if resp, err := hc.Do(req); err == nil {
		var li lockexec.LeaseInfo
		if json.NewDecoder(resp.Body).Decode(&li) == nil {
			local, _ = time.Parse(time.RFC3339Nano, li.Deadline)
		}
		resp.Body.Close()
	}
	return local, reg
}

// procRunning reports whether pid runs (a zombie does not).
func procRunning(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return pid > 0 && syscall.Kill(pid, 0) == nil && runtime.GOOS != "linux"
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// contractSlack is what the machine may add to any bound (process starts,
// a loaded CI runner).
const contractSlack = time.Second

// wantContractExit is the status the contract row's exit rules give
// the row's child, as it behaves in the row.
func wantContractExit(c contractCase) int {
	code, signal := c.exitCode, 0
	switch c.event {
	case evExit0, evExit3:
	case evSignal:
		signal = int(syscall.SIGKILL)
	default: // SIGTERM: the child exits 0, or dies of it
		if c.onTerm == "die" {
			signal = int(syscall.SIGTERM)
		}
	}
	return exitStatus(contractRowOf(c.event).exits, code, signal)
}

// checkContractRow compares a row's outcome with its contract row.
func checkContractRow(c contractCase, o *contractOutcome) []string {
	var p []string
	bad := func(f string, a ...any) { p = append(p, fmt.Sprintf(f, a...)) }
	if c.event == evWrapperKill {
		if o.exitSignal != syscall.SIGKILL {
			bad("the wrapper was not killed by SIGKILL (exit %d)", o.exit)
		}
		if o.treeGoneAfter < 0 || o.treeGoneAfter > time.Second {
			bad("the child's tree was not gone within a second of the wrapper's SIGKILL (%s)", o.treeGoneAfter)
		}
	} else {
		if want := wantContractExit(c); o.exit != want {
			bad("exit %d, want %d:\n%s", o.exit, want, o.stderr)
		}
		if !o.treeGone {
			bad("the child or its grandchild outlived the wrapper")
		}
	}
	p = append(p, checkContractTerm(c, o)...)
	return append(p, checkContractNext(c, o)...)
}

// checkContractTerm checks when the child got SIGTERM.
func checkContractTerm(c contractCase, o *contractOutcome) []string {
	var p []string
	bad := func(f string, a ...any) { p = append(p, fmt.Sprintf(f, a...)) }
	switch c.event {
	case evExit0, evExit3, evSignal, evWrapperKill:
		if !o.term.IsZero() {
			bad("the child got SIGTERM %s after the event; want none", o.term.Sub(o.event))
		}
		return p
	}
	if o.term.IsZero() {
		return append(p, "the child never got SIGTERM")
	}
	if o.term.Before(o.event) {
		bad("SIGTERM %s before the event", o.event.Sub(o.term))
	}
	switch c.event {
	case evFrozen:
		if d := o.term.Sub(o.thaw); d > contractSlack {
			bad("SIGTERM %s after the thaw; want at once", d)
		}
	case evBreak:
		if d, want := o.term.Sub(o.event), c.ttl*11/30+contractSlack; d > want { // a renewal period, jitter included
			bad("SIGTERM %s after the break; want within %s (the next renewal)", d, want)
		}
	case evRegistryKill, evRegistryStop:
		if d := o.term.Sub(o.localDeadline); o.localDeadline.IsZero() || d > 300*time.Millisecond {
			bad("SIGTERM %s after the lease's local deadline (%s); want by it", d, o.localDeadline.Format("15:04:05.000"))
		}
	case evWrapperSIGINT, evWrapperTERM:
		if d := o.term.Sub(o.event); d > contractSlack {
			bad("SIGTERM %s after the signal; want at once", d)
		}
	}
	return p
}

// checkContractNext checks when the next waiter's child started.
func checkContractNext(c contractCase, o *contractOutcome) []string {
	var p []string
	bad := func(f string, a ...any) { p = append(p, fmt.Sprintf(f, a...)) }
	expiry := o.regExpiry.Add(contractLockDelay)
	switch c.event {
	case evExit0, evExit3, evSignal, evWrapperSIGINT, evWrapperTERM, evBreak:
		if o.nextStart.IsZero() || o.nextStart.Sub(o.event) > 2*contractSlack {
			bad("the next waiter's child started %s after the event; want at once", since(o.nextStart, o.event))
		}
	case evFrozen, evWrapperKill:
		switch {
		case o.nextStart.IsZero() && c.full:
			bad("the next waiter's child never started (the registry's deadline %s)", o.regExpiry.Format("15:04:05.000"))
		case !o.nextStart.IsZero() && o.nextStart.Before(expiry.Add(-100*time.Millisecond)):
			bad("the next waiter's child started %s before the registry's deadline + lock-delay", expiry.Sub(o.nextStart))
		case !o.nextStart.IsZero() && o.nextStart.Sub(expiry) > 2*contractSlack:
			bad("the next waiter's child started %s after the registry's deadline + lock-delay; want at once", o.nextStart.Sub(expiry))
		}
	case evRegistryKill, evRegistryStop:
		switch {
		case o.nextStart.IsZero():
			bad("the next waiter's child never started")
		case !o.term.IsZero() && o.nextStart.Before(o.term):
			bad("the next waiter's child started before the holder's child got SIGTERM")
		case o.nextStart.Sub(o.thaw) > 3*contractSlack:
			bad("the next waiter's child started %s after the registry came back; want at once", o.nextStart.Sub(o.thaw))
		}
	}
	return p
}

// since is a-b, or "never" when a is zero.
func since(a, b time.Time) string {
	if a.IsZero() {
		return "never"
	}
	return a.Sub(b).Round(time.Millisecond).String()
}

// describeOutcome is one line of the table as it ran.
func describeOutcome(c contractCase, o *contractOutcome) string {
	if o == nil {
		return c.name() + ": not run"
	}
	exit := strconv.Itoa(o.exit)
	if o.exitSignal != 0 {
		exit = fmt.Sprintf("killed(%d)", int(o.exitSignal))
	}
	tree := "gone"
	if c.event == evWrapperKill {
		tree = "gone after " + o.treeGoneAfter.Round(time.Millisecond).String()
	} else if !o.treeGone {
		tree = "ALIVE"
	}
	term, next := "none", "not yet"
	if !o.term.IsZero() {
		term = "deadline" + signed(o.term.Sub(o.localDeadline)) + " event+" + o.term.Sub(o.event).Round(time.Millisecond).String()
	}
	if !o.nextStart.IsZero() {
		next = "event+" + o.nextStart.Sub(o.event).Round(time.Millisecond).String()
		if !o.regExpiry.IsZero() {
			next += " expiry" + signed(o.nextStart.Sub(o.regExpiry))
		}
	}
	return fmt.Sprintf("%-80s exit=%-15s tree=%-18s term=%-36s next=%s", c.name(), exit, tree, term, next)
}

func signed(d time.Duration) string {
	d = d.Round(time.Millisecond)
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

// The markers around the contract table in docs/operations.md.
const (
	contractBegin = "<!-- contract table: cmd/fencegate/lock_contract.go (go test ./cmd/fencegate -run TestLockContractDocs -update) -->"
	contractEnd   = "<!-- end contract table -->"
)

// TestLockContractDocs: the help of lock and elect prints the exit rules
// the contract rows use, docs/operations.md prints the contract table as
// the test runs it, and every row of the table is run.
func TestLockContractDocs(t *testing.T) {
	for _, verb := range []string{"lock", "elect"} {
		out, _, code := runCLI(verb, "--help")
		if code != 0 || !strings.Contains(out, exitStatusHelp()) {
			t.Errorf("%s --help lacks the exit status section:\n%s\nwant:\n%s", verb, out, exitStatusHelp())
		}
	}
	path := filepath.Join("..", "..", "docs", "operations.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(doc), contractBegin)
	_, after, ok2 := strings.Cut(rest, contractEnd)
	if !ok1 || !ok2 {
		t.Fatalf("docs/operations.md lacks the markers %q … %q", contractBegin, contractEnd)
	}
	want := before + contractBegin + "\n" + contractMarkdown() + contractEnd + after
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if string(doc) != want {
		t.Errorf("docs/operations.md's contract table is not lock_contract.go's (go test ./cmd/fencegate -run TestLockContractDocs -update):\n%s", contractMarkdown())
	}
	ruled := map[exitKind]bool{}
	for _, r := range lockExitRules {
		ruled[r.kind] = true
	}
	run := map[string]bool{}
	for _, e := range contractEvents {
		run[e.event] = true
	}
	for _, r := range lockContract {
		for _, k := range r.exits {
			if !ruled[k] {
				t.Errorf("row %q exits by rule %d, which the help does not print", r.event, k)
			}
		}
		if !run[r.event] {
			t.Errorf("row %q is not run by TestLockContract", r.event)
		}
		delete(run, r.event)
	}
	for e := range run {
		t.Errorf("TestLockContract runs %q, which the table does not print", e)
	}
}
