//go:build unix

// Proves lock sets with real processes (serve, `fencegate lock a b`
// wrappers, children that record what they held). Crossed order: two
// wrappers, `lock accounts/a accounts/b` and `lock accounts/b
// accounts/a`, take the set again and again for storySeconds (10 s; set
// FENCEGATE_LOCKSET_STORY_SECONDS=60 for the one-minute form): every run
// ends (no deadlock), each child finds both members held by its own
// leases in the registry (never a partial set), no two children's holds
// overlap, each member's fence rises, and a sampler of the registry never
// sees a member held outside the set. The control: two wrappers nesting
// plain locks in crossed order (lock a -- lock b, lock b -- lock a)
// deadlock, each holding one and waiting for the other until --wait ends.
// Frozen holder: a set holder frozen past its TTL with a member's
// envelope in hand loses the set to the next wrapper, whose write to that
// member lands at a higher fence; thawed, its late write is refused
// STALE_OWNER at the member's gate; the lease-only control lets it land.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/client/lockexec"
	"github.com/fencegate/fencegate/wire"
)

// storySecondsEnv sets the crossed-order story's length in seconds (CI:
// storySecondsDefault; the long form: 60).
const (
	storySecondsEnv     = "FENCEGATE_LOCKSET_STORY_SECONDS"
	storySecondsDefault = 10
)

var setAB = []string{"accounts/a", "accounts/b"}

// locksetRecordChild is the crossed-order story's child: it reads the
// set's members and leases from its environment, asks the registry who
// holds each member, holds a moment, and appends one line to
// LOCKSET_RECORD: worker, start and end (ns), each member's fence, and
// "ok" or what was wrong.
func locksetRecordChild() int {
	members := strings.Fields(os.Getenv(lockexec.EnvLockSet))
	rc, err := httpclient.NewClient(os.Getenv("REG_URL"), httpclient.WithBearerToken(os.Getenv("REG_TOKEN")))
	if err != nil {
		fmt.Println(err)
		return 3
	}
	start := time.Now().UnixNano()
	verdict, fences := "ok", make([]string, len(members))
	if !slices.Equal(members, setAB) {
		verdict = fmt.Sprintf("members=%q", members)
	}
	for i, m := range members {
		lease := os.Getenv(lockexec.MemberEnv(i, lockexec.EnvMemberLease))
		fences[i] = m + "=" + os.Getenv(lockexec.MemberEnv(i, lockexec.EnvMemberFence))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		v, err := rc.LockStatus(ctx, m)
		cancel()
		switch {
		case err != nil:
			verdict = "status:" + err.Error()
		case v.Holder == nil || v.Holder.Lease != lease:
			verdict = fmt.Sprintf("partial:%s-not-held-by-own-lease", m)
		case !slices.Equal(v.Holder.LockSet, members):
			verdict = fmt.Sprintf("partial:%s-held-outside-the-set(%v)", m, v.Holder.LockSet)
		}
	}
	ms, _ := strconv.Atoi(os.Getenv("LOCKSET_HOLD_MS"))
	time.Sleep(time.Duration(ms) * time.Millisecond)
	line := fmt.Sprintf("%s %d %d %s %s\n", os.Getenv("LOCKSET_WORKER"), start, time.Now().UnixNano(), strings.Join(fences, ","), strings.ReplaceAll(verdict, " ", "_"))
	f, err := os.OpenFile(os.Getenv("LOCKSET_RECORD"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Println(err)
		return 3
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil { // one write, O_APPEND: lines never interleave
		fmt.Println(err)
		return 3
	}
	return 0
}

// setRecord is one child's line.
type setRecord struct {
	worker     string
	start, end int64
	fences     map[string]uint64
	verdict    string
}

func readSetRecords(t *testing.T, path string) []setRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []setRecord
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 {
			t.Fatalf("record %q", line)
		}
		r := setRecord{worker: f[0], fences: map[string]uint64{}, verdict: f[4]}
		r.start, _ = strconv.ParseInt(f[1], 10, 64)
		r.end, _ = strconv.ParseInt(f[2], 10, 64)
		for _, mf := range strings.Split(f[3], ",") {
			m, fence, _ := strings.Cut(mf, "=")
			r.fences[m], _ = strconv.ParseUint(fence, 10, 64)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b setRecord) int { return int(a.start - b.start) })
	return out
}

func storySeconds(t *testing.T) time.Duration {
	if s := os.Getenv(storySecondsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want whole seconds", storySecondsEnv, s)
		}
		return time.Duration(n) * time.Second
	}
	return storySecondsDefault * time.Second
}

func TestLockSetCrossedOrder(t *testing.T) {
	w := newStoryWorld(t, false)
	record := filepath.Join(t.TempDir(), "held")
	run := func(worker string, members []string) *proc {
		args := append([]string{"lock"}, members...)
		args = append(args, "--registry", w.registry, "--token", storyTokens[worker], "--ttl", "5s", "--wait", "60s", "--", os.Args[0])
		return startProcWith(t, func(env []string) []string {
			return append(env, envChild+"=lockset-record", "LOCKSET_RECORD="+record, "LOCKSET_WORKER="+worker,
				"LOCKSET_HOLD_MS=20", "REG_URL="+w.registry, "REG_TOKEN="+storyTokens[worker])
		}, args...)
	}
	length := storySeconds(t)
	until := time.Now().Add(length)
	stop := make(chan struct{})
	samples := sampleSetHolders(t, w, stop)
	var wg sync.WaitGroup
	runs := map[string]int{}
	var mu sync.Mutex
	for worker, members := range map[string][]string{"worker-a": {"accounts/a", "accounts/b"}, "worker-b": {"accounts/b", "accounts/a"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(until) {
				p := run(worker, members)
				if code := p.wait(t, worker); code != 0 {
					t.Errorf("%s: lock %v exited %d (a deadlock ends in WAIT_TIMEOUT):\n%s%s", worker, members, code, p.out, p.err)
					return
				}
				mu.Lock()
				runs[worker]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	sampled, sampledHeld := samples()
	recs := readSetRecords(t, record)
	t.Logf("%s: %d runs (%v); the registry sampled %d times, %d with a holder", length, len(recs), runs, sampled, sampledHeld)
	if runs["worker-a"] < 3 || runs["worker-b"] < 3 {
		t.Fatalf("runs %v: each crossed-order wrapper must get the set again and again", runs)
	}
	if len(recs) != runs["worker-a"]+runs["worker-b"] {
		t.Fatalf("%d records for %v runs", len(recs), runs)
	}
	for i, r := range recs {
		if r.verdict != "ok" {
			t.Fatalf("run %d of %s held %s", i, r.worker, r.verdict)
		}
		if i == 0 {
			continue
		}
		prev := recs[i-1]
		if r.start < prev.end {
			t.Fatalf("%s's hold began %s before %s's ended: the set was held twice", r.worker, time.Duration(prev.end-r.start), prev.worker)
		}
		for _, m := range setAB {
			if r.fences[m] <= prev.fences[m] {
				t.Fatalf("%s's fence %d after %d: fences must rise per member", m, r.fences[m], prev.fences[m])
			}
		}
	}
	if sampledHeld == 0 {
		t.Fatal("the sampler never saw the set held: it checked nothing")
	}
}

// sampleSetHolders reads both members from the registry until stop,
// failing the test if a member is ever held outside the set (a holder
// whose lock set is not {a, b}). Once stop is closed, the function it
// returns waits for the sampler and gives the counts of samples and of
// samples that saw a holder.
func sampleSetHolders(t *testing.T, w *storyWorld, stop <-chan struct{}) func() (int, int) {
	rc, err := httpclient.NewClient(w.registry, httpclient.WithBearerToken(storyTokens["ops-admin"]))
	if err != nil {
		t.Fatal(err)
	}
	var n, held int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			for _, m := range setAB {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				v, err := rc.LockStatus(ctx, m)
				cancel()
				if err != nil {
					continue
				}
				n++
				if v.Holder != nil {
					held++
					if !slices.Equal(v.Holder.LockSet, setAB) {
						t.Errorf("the registry shows %s held outside the set: %+v", m, v.Holder)
					}
				}
			}
		}
	}()
	return func() (int, int) {
		<-done
		return n, held
	}
}

// TestLockSetCrossedOrderControl is the crossed-order story's negative
// control: two plain locks nested in crossed order (what a user does
// without lock sets) deadlock — each wrapper holds its outer lock and
// waits for the other's until its --wait ends.
func TestLockSetCrossedOrderControl(t *testing.T) {
	t.Parallel()
	w := newStoryWorld(t, false)
	dir := t.TempDir()
	// Each outer child marks that it holds its outer lock and waits for
	// the other's mark before asking for its inner lock: both outer locks
	// are held when either inner one is asked for, however slowly the
	// processes start.
	nested := func(worker, outer, inner string) *proc {
		tok := storyTokens[worker]
		mine, theirs := filepath.Join(dir, worker), filepath.Join(dir, map[string]string{"worker-a": "worker-b", "worker-b": "worker-a"}[worker])
		innerCmd := fmt.Sprintf(`touch %s; i=0; while [ ! -e %s ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; exec "$FG" lock %s --registry %s --token %s --wait 2s -- true`,
			mine, theirs, inner, w.registry, tok)
		return startProc(t, "lock", outer, "--registry", w.registry, "--token", tok, "--ttl", "10s", "--", "sh", "-c", innerCmd)
	}
	x := nested("worker-a", "accounts/a", "accounts/b")
	y := nested("worker-b", "accounts/b", "accounts/a")
	// Both outer locks are held when both inner ones are asked for: a
	// deadlock, which only the first --wait to run out ends (the other
	// wrapper may then get its inner lock in time).
	timedOut := 0
	for _, p := range []*proc{x, y} {
		code := p.wait(t, "nested lock")
		if code != 0 && strings.Contains(p.err.String(), "WAIT_TIMEOUT") {
			timedOut++
		}
	}
	if timedOut == 0 {
		t.Fatalf("nested plain locks in crossed order: no WAIT_TIMEOUT, the control shows no deadlock:\n%s%s\n%s%s", x.out, x.err, y.out, y.err)
	}
}

func TestLockSetFrozenHolder(t *testing.T) {
	t.Parallel()
	for _, leaseOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "fenced", true: "lease-only"}[leaseOnly], func(t *testing.T) {
			t.Parallel() // each story has its own serve, ledger and data
			frozenSetHolder(t, leaseOnly)
		})
	}
}

func frozenSetHolder(t *testing.T, leaseOnly bool) {
	w := newStoryWorld(t, leaseOnly)
	a, aIn := w.writer("worker-a", "lock", "accounts/b", "100 (by A, before its pause)", true, "accounts/a", "--ttl", "2s", "--grace", "20s")
	aRes, aFence, aChild := permitOf(t, a)
	if aRes != "accounts/a" {
		t.Fatalf("A's envelope is for %s, want the set's first member accounts/a", aRes)
	}
	freeze(t, a, aChild, syscall.SIGSTOP)
	st := startProc(t, "status", "accounts/b", "--registry", w.registry, "--token", storyTokens["ops-admin"])
	if code := st.wait(t, "status"); code != 0 || !strings.Contains(st.out.String(), "held as part of the set {accounts/a, accounts/b}") {
		t.Fatalf("status exited %d, want the member shown in its set:\n%s%s", code, st.out, st.err)
	}
	ls := startProc(t, "ls", "accounts/", "--registry", w.registry, "--token", storyTokens["ops-admin"])
	if code := ls.wait(t, "ls"); code != 0 || strings.Count(ls.out.String(), "worker-a (set of 2)") != 2 {
		t.Fatalf("ls exited %d, want both members' rows held by worker-a as a set of 2:\n%s%s", code, ls.out, ls.err)
	}
	busy := startProc(t, "lock", "accounts/c", "accounts/a", "--no-wait", "--registry", w.registry, "--token", storyTokens["worker-b"], "--", "true")
	if code := busy.wait(t, "busy set"); code != 1 || !strings.Contains(busy.err.String(), "accounts/a is held by worker-a") {
		t.Fatalf("a set over a held member with --no-wait exited %d, want 1 naming the busy member:\n%s%s", code, busy.out, busy.err)
	}
	if st := startProc(t, "status", "accounts/c", "--registry", w.registry, "--token", storyTokens["ops-admin"]); st.wait(t, "status") != 0 || !strings.Contains(st.out.String(), "holder:       none (free)") {
		t.Fatalf("the busy set's free member is held:\n%s%s", st.out, st.err)
	}
	// B names the members in the other order; it is served the set once
	// A's 2 s lease is over (A is frozen: it cannot renew).
	b, _ := w.writer("worker-b", "lock", "accounts/a", "200 (by B, the set's next holder)", false, "accounts/b", "--ttl", "10s")
	bRes, bFence, _ := permitOf(t, b)
	if bRes != aRes || bFence <= aFence {
		t.Fatalf("B wrote %s at fence %d; want %s above A's fence %d", bRes, bFence, aRes, aFence)
	}
	if code := b.wait(t, "B"); code != 0 || !strings.Contains(b.out.String(), "outcome ACCEPTED") {
		t.Fatalf("B exited %d:\n%s%s", code, b.out, b.err)
	}
	w.thawLateWriter(a, aIn, aChild, "the frozen set holder", "200 (by B, the set's next holder)")
}

// TestLockSetUsageErrors: a set the registry would refuse is a usage
// error (exit 2) before any network call, and the help names the child's
// variables.
func TestLockSetUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"lock", "accounts/a", "accounts/a", "--", "true"}, "named twice"},
		{[]string{"lock", "-n", "3", "accounts/a", "accounts/b", "--", "true"}, "-n (a semaphore) takes one RESOURCE"},
		{[]string{"lock", "accounts/a", "pool/_slot.0", "--", "true"}, "semaphore's slot"},
		{[]string{"lock", "accounts/a", "accounts/b"}, "want RESOURCE [RESOURCE...] -- COMMAND"},
	} {
		_, errOut, code := runCLI(c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
	out, _, code := runCLI("lock", "--help")
	for _, v := range []string{lockexec.EnvLockSet, "FENCEGATE_MEMBER_I_FENCE", "envelope --resource R"} {
		if code != 0 || !strings.Contains(out, v) {
			t.Errorf("lock --help (exit %d) does not name %s", code, v)
		}
	}
}

// TestLockSetStatusLines: status names a holder's set and a waiting
// set's members; ls marks a member's row.
func TestLockSetStatusLines(t *testing.T) {
	at := time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)
	v := wire.LockStatus{Resource: "accounts/a", ReadAt: at, HighestFence: 3,
		Holder:  &wire.LockHolder{Owner: "worker-a", Lease: "l1", Fence: 3, OperationClass: "lock", Since: at.Add(-time.Second), ExpiresAt: at.Add(time.Second), LockSet: setAB},
		Waiters: []wire.LockWaiter{{Owner: "worker-b", OperationClass: "lock", Since: at.Add(-time.Second), LockSet: setAB}}}
	var b strings.Builder
	printLock(&b, v)
	for _, want := range []string{"lock set:     held as part of the set {accounts/a, accounts/b}", "1. worker-b, class lock, waiting 1s (since 2026-07-19 09:59:59 UTC), for the lock set {accounts/a, accounts/b}"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	printLockLine(&b, &v)
	if !strings.Contains(b.String(), "worker-a (set of 2)") {
		t.Errorf("ls line: %q", b.String())
	}
}
