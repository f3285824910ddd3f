//go:build unix

// Proves the dashboard shows a read/write lock in a real headless
// Chromium: two `fencegate lock --read rw/report` wrappers (worker-a,
// worker-b) and one writer `fencegate lock rw/report` (worker-w) against
// a real serve. Both readers hold at once; the writer queues behind them.
// The rendered page shows one rw/report row: "2 readers share it", each
// reader with its lease and fence, worker-w in the queue marked
// "(writer)", and the line saying a queued writer keeps new readers out
// (writer preference). Both readers' wrappers end (their leases
// released); worker-w takes the lock at a fence above the readers', and
// the page shows worker-w holding it at that fence, the queue empty and
// no reader.
//
// Control, run by hand: with the dashboard of main before read/write
// locks were shown (`git checkout 285febd -- dashboard/templates
// dashboard/assets dashboard/resources.go dashboard/stuck.go
// dashboard/view.go dashboard/scope.go`) the test fails at its first
// check, "the page shows the two readers: context deadline exceeded":
// rw/report's row says "free" with worker-w waiting, and the readers'
// resource rw/report/_read has a row of its own, free at fence 0.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// rwPolicy: the workers take and see the rw/ locks (a reader's resource
// rw/NAME/_read is authorized as rw/NAME).
const rwPolicy = `{"schema": "resourcePolicy.v1", "rules": [
  {"identities": ["worker-*"], "resources": ["rw/*"], "verbs": ["acquire", "see"]}]}`

func TestDashboardReadWriteLockInChromium(t *testing.T) {
	br := newBrowser(t) // skips here, before anything starts, without chromium and outside CI
	dir := t.TempDir()
	toks := map[string]string{"ops-admin": "rw-admin-token-01234567", "worker-a": "rw-worker-a-token-012345",
		"worker-b": "rw-worker-b-token-012345", "worker-w": "rw-worker-w-token-012345"}
	var lines strings.Builder
	for id, tok := range toks {
		fmt.Fprintf(&lines, "%s %s\n", tok, id)
	}
	tokens, policy := filepath.Join(dir, "tokens"), filepath.Join(dir, "policy.json")
	if err := os.WriteFile(tokens, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte(rwPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := startServe(t, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--token-file", tokens,
		"--authz-policy", policy, "--admin", "ops-admin", "--unsafe-no-fsync")
	const name = "rw/report"
	row := `tr.res[data-resource="` + name + `"]`
	br.login(reg.url, toks["ops-admin"])
	lockAs := func(who string, read bool) (out, errOut *syncBuffer, done <-chan int, stop func()) {
		args := []string{"lock", name, "--registry", reg.url, "--token", toks[who], "--ttl", "3s", "--",
			"sh", "-c", `echo "` + who + ` holds $FENCEGATE_RESOURCE at fence $FENCEGATE_FENCE"; exec sleep 120`}
		if read {
			args = append([]string{"lock", "--read"}, args[1:]...)
		}
		return runWrapper(t, who, args)
	}

	// 1. Two readers hold at once; the writer queues behind them.
	aOut, _, _, stopA := lockAs("worker-a", true)
	waitFor(t, aOut, "worker-a holds "+name+"/_read at fence ")
	bOut, _, _, stopB := lockAs("worker-b", true)
	waitFor(t, bOut, "worker-b holds "+name+"/_read at fence ")
	wOut, wErr, wDone, _ := lockAs("worker-w", false)
	readerFence := regexp.MustCompile(`at fence (\d+)`).FindStringSubmatch(aOut.String())[1]
	br.waitText("the two readers", row+`.rwlock[data-readers="2"] td.holder span.readers-count`, "2 readers share it")
	for _, who := range []string{"worker-a", "worker-b"} {
		br.waitText(who+" among the readers", row+" td.holder ol.readers", who)
	}
	br.waitText("a reader's fence", row+" td.holder ol.readers li.reader small.lease", "· fence "+readerFence+" · since")
	br.waitText("the writer in the queue", row+" td.waiters", "1 worker-w (writer)")
	br.waitText("the writer preference", row+" td.waiters small.writer-preference", "a writer is queued: new readers wait behind it (writer preference)")
	br.shot("13-rwlock-readers-writer-queued")
	if strings.Contains(wOut.String(), "worker-w holds") {
		t.Fatalf("the writer ran beside the readers:\n%s%s", wOut, wErr)
	}

	// 2. Both readers' wrappers end and release: the writer takes the lock.
	stopA()
	stopB()
	fence := regexp.MustCompile(`worker-w holds ` + name + ` at fence (\d+)`)
	waitFor(t, wOut, "worker-w holds "+name+" at fence ")
	writerFence := fence.FindStringSubmatch(wOut.String())[1]
	if w, r := atoi(t, writerFence), atoi(t, readerFence); w <= r {
		t.Fatalf("the writer's fence %s is not above the readers' %s", writerFence, readerFence)
	}
	br.waitText("the writer holding", row+" td.holder", "worker-w")
	br.waitText("the writer's fence", row+" td.holder small.lease", "· fence "+writerFence)
	br.waitText("the empty queue", row+" td.waiters", "0")
	br.do("no reader left", chromedp.Poll[chromedp.Void](fmt.Sprintf(`!document.querySelector(%s)`, js(row+" ol.readers")),
		chromedp.WithPollingTimeout(browserStepTimeout), chromedp.WithPollingInterval(100*time.Millisecond)))
	br.shot("14-rwlock-writer-holds")
	select {
	case code := <-wDone:
		t.Errorf("worker-w's fencegate lock exited %d while holding:\n%s%s", code, wOut, wErr)
	default:
	}
}
