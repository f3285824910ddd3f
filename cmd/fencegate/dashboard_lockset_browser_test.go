//go:build unix

// Proves the dashboard shows lock sets in a real headless Chromium: two
// real `fencegate lock` wrappers against a real serve, worker-a taking
// the set `acct/a acct/b` and worker-b the same set named the other way
// round (`acct/b acct/a`; the CLI sorts it). worker-a holds both members;
// worker-b's set waits, holding nothing. The rendered page shows, on each
// member's row, worker-a holding it "as part of set {acct/a, acct/b}"
// with the other member linked to its row, and worker-b in the member's
// queue "waits for set {acct/a, acct/b}". worker-a's wrapper ends; worker-b
// takes the set, and the page shows it holding both members as part of
// the set and the queues empty.
//
// Control, run by hand: with the dashboard of main before lock sets were
// shown (`git checkout 5fa5bd7 -- dashboard/templates dashboard/render.go
// dashboard/resources.go dashboard/stuck.go`) the test fails at its first
// set check, "the page shows acct/a held as part of the set: context
// deadline exceeded": the holder cell names worker-a and its fence, nothing
// names the set.
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

	"github.com/chromedp/chromedp"
)

// setPolicy: the workers take and see the acct/ resources.
const setPolicy = `{"schema": "resourcePolicy.v1", "rules": [
  {"identities": ["worker-*"], "resources": ["acct/*"], "verbs": ["acquire", "see"]}]}`

func TestDashboardLockSetInChromium(t *testing.T) {
	br := newBrowser(t) // skips here, before anything starts, without chromium and outside CI
	dir := t.TempDir()
	toks := map[string]string{"ops-admin": "set-admin-token-0123456", "worker-a": "set-worker-a-token-01234", "worker-b": "set-worker-b-token-01234"}
	var lines strings.Builder
	for id, tok := range toks {
		fmt.Fprintf(&lines, "%s %s\n", tok, id)
	}
	tokens, policy := filepath.Join(dir, "tokens"), filepath.Join(dir, "policy.json")
	if err := os.WriteFile(tokens, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte(setPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := startServe(t, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--token-file", tokens,
		"--authz-policy", policy, "--admin", "ops-admin", "--unsafe-no-fsync")
	row := func(r string) string { return `tr.res[data-resource="` + r + `"]` }
	br.login(reg.url, toks["ops-admin"])

	// 1. worker-a holds the set; worker-b's set (named b a) waits.
	aOut, aErr, _, stopA := setAs(t, reg.url, toks["worker-a"], "A", "acct/a", "acct/b")
	waitFor(t, aOut, "A holds acct/a acct/b")
	bOut, bErr, bDone, _ := setAs(t, reg.url, toks["worker-b"], "B", "acct/b", "acct/a")
	for _, r := range []string{"acct/a", "acct/b"} {
		br.waitText(r+"'s holder", row(r)+" td.holder", "worker-a")
		br.waitText(r+" held as part of the set", row(r)+" td.holder small.lockset", "held as part of set {acct/a, acct/b}")
		br.waitText(r+"'s queue: worker-b waits for the set", row(r)+" td.waiters", "1 worker-b waits for set {acct/a, acct/b}")
	}
	// Each row links the other member, and the link leads to that row.
	for _, c := range [][2]string{{"acct/a", "acct/b"}, {"acct/b", "acct/a"}} {
		br.do(c[0]+" links "+c[1], chromedp.Poll[chromedp.Void](fmt.Sprintf(`(function(){
			var a = document.querySelector(%s); if (!a) return false;
			var e = document.getElementById(decodeURIComponent(a.hash.slice(1)));
			return !!e && e.closest("tr").dataset.resource === %s;})()`,
			js(row(c[0])+" td.holder small.lockset a.member"), js(c[1])),
			chromedp.WithPollingTimeout(browserStepTimeout), chromedp.WithPollingInterval(100*time.Millisecond)))
	}
	br.shot("11-lockset-held-and-waiting")
	if strings.Contains(bOut.String(), "B holds") {
		t.Fatalf("worker-b ran while worker-a held the set:\n%s%s\nA: %s%s", bOut, bErr, aOut, aErr)
	}

	// 2. worker-a's wrapper ends and releases the set: worker-b takes it.
	stopA()
	waitFor(t, bOut, "B holds acct/a acct/b")
	for _, r := range []string{"acct/a", "acct/b"} {
		br.waitText(r+"'s new holder", row(r)+" td.holder", "worker-b")
		br.waitText(r+" held by worker-b as part of the set", row(r)+" td.holder small.lockset", "held as part of set {acct/a, acct/b}")
		br.waitText(r+"'s empty queue", row(r)+" td.waiters", "0")
	}
	br.shot("12-lockset-handed-on")
	select {
	case code := <-bDone:
		t.Errorf("worker-b's fencegate lock exited %d while holding:\n%s%s", code, bOut, bErr)
	default:
	}
}

// setAs runs `fencegate lock MEMBER… --ttl 3s -- sh -c 'echo NAME holds
// $FENCEGATE_LOCKSET; exec sleep 120'` in-process as the worker whose
// token is tok, as permitAs does for a semaphore's permit: stop ends the
// wrapper (it releases the set), once; done is its exit code, unless stop
// took it.
func setAs(t *testing.T, registry, tok, name string, members ...string) (out, errOut *syncBuffer, done <-chan int, stop func()) {
	t.Helper()
	args := append([]string{"lock"}, members...)
	args = append(args, "--registry", registry, "--token", tok, "--ttl", "3s", "--",
		"sh", "-c", `echo "`+name+` holds $FENCEGATE_LOCKSET"; exec sleep 120`)
	return runWrapper(t, name, args)
}

// runWrapper runs the fencegate command args in-process (run, as main
// does) until stop cancels it.
func runWrapper(t *testing.T, name string, args []string) (out, errOut *syncBuffer, done <-chan int, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut = &syncBuffer{}, &syncBuffer{}
	ch, exited := make(chan int, 1), make(chan struct{})
	go func() {
		defer close(exited)
		ch <- run(ctx, args, out, errOut)
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
