//go:build unix

// Proves the dashboard shows a counting semaphore in a real headless
// Chromium: three `fencegate lock -n 2 pool/db` wrappers against a real
// serve; worker-a and worker-b hold its two slots (fence 1 each),
// worker-c queues; the rendered page shows one pool/db row with "2 of 2
// permits held", each slot's holder and fence, and worker-c in its
// queue. worker-a's wrapper ends (its lease released); worker-c takes
// slot 0 at fence 2, and the page shows worker-c on slot 0 at fence 2,
// worker-b still on slot 1, and the queue empty. Screenshots go to the
// test's temp dir (and to FENCEGATE_SCREENSHOT_DIR when set). Then an
// admin breaks slot 1 from its own Break…: worker-b's permit alone ends
// and its wrapper stops; slot 0 stays worker-c's.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// semPolicy: the workers take permits of the pool/ semaphores and see them.
const semPolicy = `{"schema": "resourcePolicy.v1", "rules": [
  {"identities": ["worker-*"], "resources": ["pool/*"], "verbs": ["acquire", "see"]}]}`

// permitAs runs `fencegate lock -n 2 RESOURCE --ttl 3s -- sh -c 'echo
// NAME holds fence N on SLOT; exec sleep 120'` in-process as the worker
// whose token is tok; stop ends the wrapper (it releases its permit),
// once; done is its exit code.
func permitAs(t *testing.T, registry, tok, resource, name string) (out, errOut *syncBuffer, done <-chan int, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut = &syncBuffer{}, &syncBuffer{}
	ch, exited := make(chan int, 1), make(chan struct{})
	go func() {
		defer close(exited)
		ch <- run(ctx, []string{"lock", "-n", "2", resource, "--registry", registry, "--token", tok, "--ttl", "3s", "--",
			"sh", "-c", `echo "` + name + ` holds fence $FENCEGATE_FENCE on $FENCEGATE_RESOURCE"; exec sleep 120`}, out, errOut)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-exited: // not ch: the test may have taken the exit code
			case <-time.After(20 * time.Second):
				t.Errorf("%s's fencegate lock did not end within 20 s", name)
			}
		})
	}
	t.Cleanup(stop)
	return out, errOut, ch, stop
}

func TestDashboardSemaphoreInChromium(t *testing.T) {
	br := newBrowser(t) // skips here, before anything starts, without chromium and outside CI
	dir := t.TempDir()
	toks := map[string]string{"ops-admin": "sem-admin-token-0123456", "worker-a": "sem-worker-a-token-01234",
		"worker-b": "sem-worker-b-token-01234", "worker-c": "sem-worker-c-token-01234"}
	var lines strings.Builder
	for id, tok := range toks {
		fmt.Fprintf(&lines, "%s %s\n", tok, id)
	}
	tokens, policy := filepath.Join(dir, "tokens"), filepath.Join(dir, "policy.json")
	if err := os.WriteFile(tokens, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte(semPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := startServe(t, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--token-file", tokens,
		"--authz-policy", policy, "--admin", "ops-admin", "--unsafe-no-fsync")
	const sem = "pool/db"
	row := `tr.res.semaphore[data-resource="` + sem + `"][data-permits="2"]`
	slot := func(i int) string {
		return fmt.Sprintf(`%s li.slot[data-slot="%d"][data-resource="%s/_slot.%d"]`, row, i, sem, i)
	}
	br.login(reg.url, toks["ops-admin"])

	// 1. Two permits held, a third waiting in the semaphore's queue.
	aOut, aErr, _, stopA := permitAs(t, reg.url, toks["worker-a"], sem, "A")
	waitFor(t, aOut, "A holds fence 1 on "+sem+"/_slot.0")
	bOut, bErr, bDone, _ := permitAs(t, reg.url, toks["worker-b"], sem, "B")
	waitFor(t, bOut, "B holds fence 1 on "+sem+"/_slot.1")
	cOut, cErr, _, _ := permitAs(t, reg.url, toks["worker-c"], sem, "C")
	br.waitText("the permits held", row+" td.resource small.permits", "semaphore · 2 of 2 permits held")
	br.waitText("slot 0's holder", slot(0), "worker-a")
	br.waitText("slot 0's fence", slot(0)+" small.lease", "fence 1 · since")
	br.waitText("slot 1's holder", slot(1), "worker-b")
	br.waitText("the queue", row+" td.waiters", "1 worker-c")
	br.waitText("the longest waiter", row+" td.waiting", "worker-c since")
	br.shot("9-semaphore-full")
	if strings.Contains(cOut.String(), "C holds") {
		t.Fatalf("worker-c ran while both permits were held:\n%s%s\nA: %s%s", cOut, cErr, aOut, aErr)
	}

	// 2. worker-a's wrapper ends and releases slot 0: worker-c takes it at fence 2.
	stopA()
	waitFor(t, cOut, "C holds fence 2 on "+sem+"/_slot.0")
	br.waitText("slot 0's new holder", slot(0), "worker-c")
	br.waitText("slot 0's new fence", slot(0)+" small.lease", "fence 2 · since")
	br.waitText("slot 1 still held", slot(1), "worker-b")
	br.waitText("the empty queue", row+" td.waiters", "0")
	br.waitText("each slot's highest fence", row+" td.fence", "0: 2 1: 1")
	br.shot("10-semaphore-handed-on")
	select {
	case code := <-bDone:
		t.Errorf("worker-b's fencegate lock exited %d while holding:\n%s%s", code, bOut, bErr)
	default:
	}

	// 3. An admin breaks slot 1 from its own Break…: worker-b's permit
	// alone ends (its wrapper stops), slot 0 stays worker-c's.
	br.click(slot(1) + " a.break")
	br.waitText("the slot's holder in the facts", "#facts", "held by worker-b since")
	br.confirm("#note", "worker-b hung, INC-78", sem+"/_slot.1", "11-confirm-slot-break")
	br.waitText("the slot break's result", `#flash[data-kind="break"][data-state="done"]`, "broke worker-b's lease")
	br.waitText("slot 1 free", slot(1), "free")
	br.waitText("slot 0 untouched", slot(0), "worker-c")
	br.shot("12-slot-broken")
	waitFor(t, bErr, "stopping the child") // at its next renewal: LEASE_BROKEN (the cleanup takes its exit)
}
