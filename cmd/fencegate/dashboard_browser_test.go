//go:build unix

// Proves the dashboard in a real headless Chromium: serve, the ledger
// gate reporting to it, and two worker processes play the Worker-A story
// (A frozen with SIGSTOP past its lease, B takes over); the rendered page
// shows B holding fence 2, then A's STALE_OWNER rejection; a second
// registry on the same key re-issues fence 2 (an injected regression) and
// the page shows the resource PAUSED; an admin then raises the floor and
// resumes the resource from the page, each step confirmed, and the resume
// is recorded by the registry (audit line) and by the gate itself
// (operator_actions, through `fencegate gate status`). The browser also
// sees the page's security headers (a CSP allowing only the page's own
// assets and no framing, nosniff, same-origin referrers) and holds only
// a session ID, never the token, in an HttpOnly, SameSite=Strict cookie
// its scripts cannot read. A second story, with the stuck-wait threshold
// at 2 s: worker-a holds jobs/nightly under fencegate lock, renewing,
// while worker-b queues behind it; the page lists the wait as stuck (who
// has waited how long behind whom) and flags the row; an admin breaks
// the lock from the page (Break…, the facts, a note, the resource typed),
// worker-b holds the resource at fence 2 and runs its command, worker-a's
// fencegate lock stops its child, the page is all clear again, and the
// break is in serve's audit log. Screenshots go to the test's temp dir
// (and to FENCEGATE_SCREENSHOT_DIR when set).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fencegate/fencegate/dashboard"
	"github.com/fencegate/fencegate/demo/ledger"
	"github.com/fencegate/fencegate/registry/httpapi"
)

// dashPolicy: the workers lock invoice batches, the ledger's gate sees
// them (to report them); the admin needs no rule.
const dashPolicy = `{"schema": "resourcePolicy.v1", "rules": [
  {"identities": ["worker-a", "worker-b"], "resources": ["invoice-batch/*"], "verbs": ["acquire", "see"]},
  {"identities": ["ledger-gate"], "resources": ["invoice-batch/*"], "verbs": ["see"]}]}`

const (
	dashAdminToken  = "dash-admin-token-0123456"
	dashLedgerToken = "dash-ledger-token-012345"
	dashResource    = "invoice-batch/2026-07-19"
)

// dashStory is the processes of one run.
type dashStory struct {
	t                               *testing.T
	dir, data, tokens, policy, lgDB string
	registry, ledger                *served
	d                               *demo // spawns the worker processes
}

func newDashStory(t *testing.T) *dashStory {
	dir := t.TempDir()
	s := &dashStory{t: t, dir: dir, data: filepath.Join(dir, "registry"), tokens: filepath.Join(dir, "tokens"), lgDB: filepath.Join(dir, "ledger.db")}
	tokens := map[string]string{"worker-a": "dash-worker-a-token-0123", "worker-b": "dash-worker-b-token-0123"}
	lines := dashAdminToken + " ops-admin\n" + dashLedgerToken + " ledger-gate\n"
	for id, tok := range tokens {
		lines += tok + " " + id + "\n"
	}
	if err := os.WriteFile(s.tokens, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	s.policy = filepath.Join(dir, "policy.json")
	if err := os.WriteFile(s.policy, []byte(dashPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	s.registry = startServe(t, "--data-dir", s.data, "--listen", "127.0.0.1:0", "--token-file", s.tokens, "--authz-policy", s.policy,
		"--admin", "ops-admin", "--gate-reporter", "ledger-gate", "--unsafe-no-fsync",
		"--status-proof-ttl-ms", "10000") // B's envelope, built before the page is looked at, stays fresh

	s.ledger = startInProcess(t, ledgerReady, "demo", "ledger", "--db", s.lgDB, "--token-file", s.tokens,
		"--trust-bundle", filepath.Join(s.data, "trust-bundle.json"), "--report-to", s.registry.url,
		"--report-token", dashLedgerToken, "--report-identity", "ledger-gate", "--report-interval-ms", "500")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envTestAsCLI, "1") // the worker processes are this test binary acting as fencegate
	s.d = &demo{self: self, dir: dir, out: &syncBuffer{}, start: time.Now(), tokens: tokens, registry: s.registry.url}
	t.Cleanup(s.d.stopAll)
	return s
}

// worker starts `fencegate demo worker` against registry as id; with hold
// it waits on stdin (after its envelope is built) before sending.
func (s *dashStory) worker(ctx context.Context, name, registry string, hold bool, extra ...string) *child {
	s.t.Helper()
	id := "worker-" + strings.ToLower(name)
	args := append([]string{"demo", "worker", "--name", name, "--registry", registry, "--ledger", s.ledger.url,
		"--token", s.d.tokens[id], "--resource", dashResource, "--op", "settle-" + strings.ToLower(name),
		"--set", demoKey + "=" + name, "--wait-ms", "15000"}, extra...)
	if hold {
		args = append(args, "--hold")
	}
	c, err := s.d.spawn(ctx, "worker "+name, hold, args...)
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// event waits for one of kinds from c, failing the test otherwise.
func (s *dashStory) event(ctx context.Context, c *child, kinds ...string) ledger.Event {
	s.t.Helper()
	e, err := c.waitEvent(ctx, kinds...)
	if err != nil {
		s.t.Fatalf("%s: %v\n%s", c.Name, err, c.Stderr())
	}
	return e
}

// handoff plays the Worker-A story up to B holding the lease with its
// write ready, and returns A (frozen) and B (holding).
func (s *dashStory) handoff(ctx context.Context) (a, b *child) {
	a = s.worker(ctx, "A", s.registry.url, true, "--ttl-ms", "2000")
	s.event(ctx, a, "ready")
	if err := a.freeze(); err != nil {
		s.t.Fatal(err)
	}
	b = s.worker(ctx, "B", s.registry.url, true, "--ttl-ms", "15000")
	if e := s.event(ctx, b, "ready"); e.Fence != 2 {
		s.t.Fatalf("B's envelope under fence %d, want 2", e.Fence)
	}
	return a, b
}

// regress starts a second registry on the same signing key with its own
// (empty) etcd and a floor of 1, so it grants fence 2 a second time, and
// sends that grant's write: the gate sees two grants with one fence.
func (s *dashStory) regress(ctx context.Context) {
	rogue := startServe(s.t, "--data-dir", filepath.Join(s.dir, "rogue"), "--key", filepath.Join(s.data, httpapi.KeyFileName),
		"--listen", "127.0.0.1:0", "--token-file", s.tokens, "--authz-policy", s.policy, "--admin", "ops-admin", "--unsafe-no-fsync", "--dashboard=false")
	if out, errOut, code := runCLI("floor", "raise", dashResource, "--above", "1", "--note", "injected regression",
		"--registry", rogue.url, "--token", dashAdminToken); code != 0 {
		s.t.Fatalf("floor raise on the second registry: %d\n%s%s", code, out, errOut)
	}
	w := s.worker(ctx, "A", rogue.url, false)
	if e := s.event(ctx, w, "rejected"); e.Outcome != "FENCE_REGRESSION" || e.Fence != 2 {
		s.t.Fatalf("the re-issued fence 2: %s fence %d, want FENCE_REGRESSION", e.Outcome, e.Fence)
	}
	s.event(ctx, w, "done")
}

func TestDashboardInChromium(t *testing.T) {
	br := newBrowser(t) // skips here, before anything starts, without chromium and outside CI
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s := newDashStory(t)
	if _, err := os.Stat(filepath.Join(s.data, httpapi.KeyFileName)); err != nil {
		t.Fatalf("serve's generated key: %v", err)
	}
	row := `tr.res[data-resource="` + dashResource + `"]`
	br.login(s.registry.url, dashAdminToken)
	checkPageSecurity(t, br, s.registry.url)

	// 1. The handoff: B holds fence 2 while A is frozen with fence 1 in hand.
	a, b := s.handoff(ctx)
	br.waitText("the new holder", row+" td.holder", "worker-b")
	br.waitText("fence 2 at the registry", row+" td.fence", "2")
	br.shot("1-holder")
	if _, err := b.Stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	s.event(ctx, b, "done")
	if err := a.thaw(); err != nil {
		t.Fatal(err)
	}
	if e := s.event(ctx, a, "rejected"); e.Outcome != "STALE_OWNER" {
		t.Fatalf("A's late write: %s, want STALE_OWNER", e.Outcome)
	}
	s.event(ctx, a, "done")
	br.waitText("the gate's highestFence", row+` span.cell[data-gate="ledger-gate"]`, "ledger-gate: 2")
	br.waitText("A's rejection", `tr.decision[data-outcome="STALE_OWNER"]`, "worker-a")
	br.shot("2-stale-owner")

	// 2. An injected regression pauses the resource, and the page says so.
	s.regress(ctx)
	br.waitText("the paused resource", row+".paused td.gates", "PAUSED")
	br.waitText("the alarm", "#attention li.bad", dashResource+" is PAUSED at gate ledger-gate")
	br.waitText("the regression decision", `tr.decision[data-outcome="FENCE_REGRESSION"]`, "FENCE_REGRESSION")
	br.shot("3-paused")

	// 3. Resume from the page: the floor first, then the gate, each confirmed.
	br.click(row + " a.resume")
	br.waitText("the registry's next fence", "#facts", "next fence 3")
	br.click("#first-step") // raise the registry's floor to 3 first
	br.confirm("#note", "INC-42: second registry on the same key", dashResource, "")
	br.waitText("the floor raise", `tr.action[data-kind="raise-floor"]`, "done")
	br.waitText("the new floor", row+" td.floor", "3")
	br.click(row + " a.resume")
	br.waitValue("#value", "3")
	br.confirm("#note", "INC-42: floor raised to 3", dashResource, "4-confirm-resume")
	br.waitText("the gate's answer", `#flash[data-state="applied"]`, "applied")
	br.waitText("the gate's answer in the list", `tr.action[data-kind="gate-resume"]`, "applied")
	br.waitText("the resumed resource", `tr.gate-res[data-resource="`+dashResource+`"] td.state`, "ok")
	br.waitText("the gate's record", `tr.gate-res[data-resource="`+dashResource+`"] td.last-action`, "resume by ops-admin")
	br.shot("5-resumed")

	s.checkRecorded()
	// And the resource takes writes again, above every fence it has seen.
	w := s.worker(ctx, "B", s.registry.url, false)
	if e := s.event(ctx, w, "done"); e.Fence != 4 || e.Outcome != "" {
		t.Errorf("write after the resume: fence %d outcome %q, want fence 4 ACCEPTED", e.Fence, e.Outcome)
	}
}

// checkRecorded wants the floor raise and the resume in serve's audit
// log, and the resume in the gate's own operator actions.
func (s *dashStory) checkRecorded() {
	t := s.t
	t.Helper()
	logs := s.registry.stderr.String()
	for _, want := range []string{
		`msg="admin action" audit=true operator=ops-admin action=raise-floor resource=` + dashResource + ` value=3 note="INC-42: second registry on the same key" outcome=done via=dashboard`,
		`msg="admin action" audit=true operator=ops-admin action=gate-resume resource=` + dashResource + ` value=3 note="INC-42: floor raised to 3" outcome=queued gate=ledger-gate`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("serve's log lacks %q", want)
		}
	}
	applied := regexp.MustCompile(`msg="admin action" audit=true operator=ops-admin action=gate-resume resource=` + regexp.QuoteMeta(dashResource) +
		` value=3 note="INC-42: floor raised to 3" gate=ledger-gate command=[0-9a-f]+ outcome=applied message="resumed ` + regexp.QuoteMeta(dashResource) + ` with floor 3" via=dashboard`)
	if !applied.MatchString(logs) {
		t.Errorf("serve's log lacks the gate's answer (%s):\n%s", applied, logs)
	}
	out, errOut, code := runCLI("gate", "status", dashResource, "--db", s.lgDB)
	for _, want := range []string{"paused:              no", "resumed with floor:  3", "resume by ops-admin", "INC-42: floor raised to 3 (dashboard command "} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("gate status (exit %d) lacks %q:\n%s%s", code, want, out, errOut)
		}
	}
}

// checkPageSecurity loads the page, its login form and one of its assets
// in the browser and wants the headers that keep it from being framed,
// sniffed into another type, or leaking its address; and the login
// cookie to be a session ID the page's scripts cannot read.
func checkPageSecurity(t *testing.T, br *browser, base string) {
	t.Helper()
	for _, path := range []string{"/ui/", "/ui/login", "/ui/assets/live.js"} {
		ctx, cancel := context.WithTimeout(br.ctx, browserStepTimeout)
		resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(base+path))
		cancel()
		if err != nil {
			t.Fatalf("load %s: %v", path, err)
		}
		h := func(name string) string {
			for k, v := range resp.Headers {
				if strings.EqualFold(k, name) {
					s, _ := v.(string)
					return s
				}
			}
			return ""
		}
		csp := h("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: Content-Security-Policy %q lacks %q", path, csp, want)
			}
		}
		for name, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "X-Frame-Options": "DENY"} {
			if got := h(name); got != want {
				t.Errorf("%s: %s %q, want %q", path, name, got, want)
			}
		}
	}
	ctx, cancel := context.WithTimeout(br.ctx, browserStepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#who"))); err != nil {
		t.Fatalf("back to the page: %v", err)
	}
	var jar struct { // Network.getCookies's answer, the fields checked
		Cookies []struct {
			Name     string `json:"name"`
			Value    string `json:"value"`
			Path     string `json:"path"`
			SameSite string `json:"sameSite"`
			HTTPOnly bool   `json:"httpOnly"`
		} `json:"cookies"`
	}
	getCookies := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		return chromedp.Void{}, tg.Call(ctx, "Network.getCookies", map[string]any{"urls": []string{base + "/ui/"}}, &jar)
	}
	if _, err := chromedp.Run(ctx, chromedp.Action[chromedp.Void](getCookies)); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range jar.Cookies {
		if c.Name != dashboard.CookieName {
			continue
		}
		found = true
		if strings.Contains(c.Value, dashAdminToken) || len(c.Value) < 43 || !c.HTTPOnly || c.SameSite != "Strict" || c.Path != "/ui/" {
			t.Errorf("the browser's login cookie %+v: want a session ID (not the token), HttpOnly, SameSite=Strict, Path=/ui/", c)
		}
	}
	if !found {
		t.Errorf("the browser holds no %s cookie: %+v", dashboard.CookieName, jar.Cookies)
	}
	if seen, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.cookie")); err != nil || strings.Contains(seen, dashboard.CookieName) {
		t.Errorf("the page's script reads the login cookie: %q %v", seen, err)
	}
}

// stuckPolicy: two workers lock and see jobs; the admin needs no rule.
const stuckPolicy = `{"schema": "resourcePolicy.v1", "rules": [
  {"identities": ["worker-a", "worker-b"], "resources": ["jobs/*"], "verbs": ["acquire", "see"]}]}`

// lockAs runs `fencegate lock RESOURCE --ttl 3s -- sh -c 'echo NAME holds
// fence N; exec sleep 120'` in-process as the worker whose token is tok,
// until it exits or the test ends. The cleanup waits on a channel of its
// own: the test may have taken the exit code from done already.
func lockAs(t *testing.T, registry, tok, resource, name string) (out, errOut *syncBuffer, done <-chan int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut = &syncBuffer{}, &syncBuffer{}
	ch, exited := make(chan int, 1), make(chan struct{})
	go func() {
		defer close(exited)
		ch <- run(ctx, []string{"lock", resource, "--registry", registry, "--token", tok, "--ttl", "3s", "--",
			"sh", "-c", `echo "` + name + ` holds fence $FENCEGATE_FENCE"; exec sleep 120`}, out, errOut)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
		}
	})
	return out, errOut, ch
}

func TestDashboardStuckWaitAndBreakInChromium(t *testing.T) {
	br := newBrowser(t) // skips here, before anything starts, without chromium and outside CI
	dir := t.TempDir()
	toks := map[string]string{"ops-admin": "stuck-admin-token-012345", "worker-a": "stuck-worker-a-token-0123", "worker-b": "stuck-worker-b-token-0123"}
	var lines strings.Builder
	for id, tok := range toks {
		fmt.Fprintf(&lines, "%s %s\n", tok, id)
	}
	tokens, policy := filepath.Join(dir, "tokens"), filepath.Join(dir, "policy.json")
	if err := os.WriteFile(tokens, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte(stuckPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := startServe(t, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--token-file", tokens,
		"--authz-policy", policy, "--admin", "ops-admin", "--unsafe-no-fsync",
		"--dashboard-stuck-wait-ms", "2000") // a test's "long": a 2 s wait is stuck
	const res = "jobs/nightly"
	row := `tr.res[data-resource="` + res + `"]`
	br.login(reg.url, toks["ops-admin"])

	// 1. worker-a holds the lock and renews it; worker-b queues behind it.
	aOut, aErr, aDone := lockAs(t, reg.url, toks["worker-a"], res, "A")
	waitFor(t, aOut, "A holds fence 1")
	bOut, bErr, bDone := lockAs(t, reg.url, toks["worker-b"], res, "B")
	br.waitText("the holder", row+" td.holder", "worker-a")
	br.waitText("the stuck wait", "#attention li.bad", res+": worker-b has waited")
	br.waitText("whom it waits behind", "#attention li.bad", "behind worker-a, held")
	br.waitText("the flagged row", row+".stuck td.waiting.stuck-flag", "worker-b since")
	br.shot("6-stuck-wait")
	if strings.Contains(bOut.String(), "B holds") {
		t.Fatalf("worker-b ran before the break:\n%s%s", bOut, bErr)
	}

	// 2. Break it from the page: Break…, the facts, a note, the resource typed.
	br.click(row + " a.break")
	br.waitText("the holder in the facts", "#facts", "held by worker-a since")
	br.waitText("the waiter in the facts", "#facts", "1 waiting, head first: worker-b since")
	br.confirm("#note", "worker-a hung, INC-77", res, "7-confirm-break")
	br.waitText("the break's result", `#flash[data-kind="break"][data-state="done"]`, "worker-b holds it now (fence 2)")
	waitFor(t, bOut, "B holds fence 2")
	br.waitText("the new holder", row+" td.holder", "worker-b")
	br.waitText("the all clear", "#allclear", "Nothing is stuck: no wait over 2s")
	br.shot("8-broken")

	if code := waitExit(t, aDone, "worker-a after the break", aOut, aErr); code == 0 {
		t.Errorf("worker-a's fencegate lock exited 0 after its lease was broken:\n%s%s", aOut, aErr)
	}
	select {
	case code := <-bDone:
		t.Errorf("worker-b's fencegate lock exited %d while holding:\n%s%s", code, bOut, bErr)
	default:
	}
	audit := regexp.MustCompile(`msg="admin action" audit=true operator=ops-admin action=break resource=` + regexp.QuoteMeta(res) +
		` value=0 note="worker-a hung, INC-77" outcome=done lease=\S+ message="broke worker-a's lease \S+ \(fence 1\); worker-b holds it now \(fence 2\)" via=dashboard`)
	if !audit.MatchString(reg.stderr.String()) {
		t.Errorf("serve's log lacks the break (%s):\n%s", audit, reg.stderr)
	}
}
