// Drives one headless Chromium tab for the dashboard test (chromedp). The
// browser is Debian's chromium; without it the test skips, unless
// FENCEGATE_REQUIRE_CHROMIUM is set (CI), where it fails.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserStepTimeout bounds one step: a navigation, or a wait for the
// page to show something.
const browserStepTimeout = 20 * time.Second

type browser struct {
	t     *testing.T
	ctx   context.Context
	dir   string // screenshots
	close func() // ends the browser; again is a no-op
}

// chromiumPath finds the browser.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("FENCEGATE_REQUIRE_CHROMIUM") != "" {
			t.Fatal("FENCEGATE_REQUIRE_CHROMIUM is set but no chromium is on PATH (apt-get install chromium)")
		}
		t.Skip("no chromium on PATH (apt-get install chromium; CI sets FENCEGATE_REQUIRE_CHROMIUM)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1360, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelTab := chromedp.NewContext(actx)
	closeBrowser := func() { cancelTab(); cancelAlloc() }
	t.Cleanup(closeBrowser)
	b := &browser{t: t, ctx: bctx, dir: t.TempDir(), close: closeBrowser}
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil { // starts the browser
		t.Fatalf("start chromium %s: %v", path, err)
	}
	return b
}

// do runs steps within browserStepTimeout, failing with a screenshot.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.fail(what, err)
	}
}

// fail saves what the page shows and ends the test.
func (b *browser) fail(what string, err error) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	html, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body ? document.body.innerText : ''"))
	b.shot("failure")
	b.t.Fatalf("browser: %s: %v\npage text:\n%s", what, err, html)
}

func js(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// login gives the page a bearer token on /ui/login.
//
// The browser is closed before the server at base stops (a cleanup
// registered now runs before that server's, started earlier): the page's
// live connection would otherwise hold the server's shutdown for its
// whole grace (httpapi.ShutdownGraceMs).
func (b *browser) login(base, token string) {
	b.t.Helper()
	b.t.Cleanup(b.close)
	b.do("log in", chromedp.Navigate(base+"/ui/login"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Submit(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#who")))
}

// waitText waits until the element sel exists and its text contains want.
func (b *browser) waitText(what, sel, want string) {
	b.t.Helper()
	b.do("the page shows "+what, chromedp.Poll[chromedp.Void](fmt.Sprintf(
		`(function(){var e=document.querySelector(%s); return !!e && e.textContent.includes(%s);})()`, js(sel), js(want)),
		chromedp.WithPollingTimeout(browserStepTimeout), chromedp.WithPollingInterval(100*time.Millisecond)))
}

// waitValue waits until the input sel holds want.
func (b *browser) waitValue(sel, want string) {
	b.t.Helper()
	b.do(sel+" = "+want, chromedp.Poll[chromedp.Void](fmt.Sprintf(
		`(function(){var e=document.querySelector(%s); return !!e && e.value === %s;})()`, js(sel), js(want)),
		chromedp.WithPollingTimeout(browserStepTimeout), chromedp.WithPollingInterval(100*time.Millisecond)))
}

// click follows the link sel. It reads the link's address and navigates
// there rather than clicking, because the live part of the page is
// replaced every second and a node can go stale between query and click.
func (b *browser) click(sel string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStepTimeout)
	defer cancel()
	href, err := chromedp.Run(ctx, chromedp.Poll[string](fmt.Sprintf(`(function(){var e=document.querySelector(%s); return e && e.href;})()`, js(sel)),
		chromedp.WithPollingTimeout(browserStepTimeout), chromedp.WithPollingInterval(100*time.Millisecond)))
	if err != nil {
		b.fail("find "+sel, err)
	}
	b.do("follow "+sel, chromedp.Navigate(href), chromedp.WaitVisible(chromedp.CSS("main")))
}

// confirm fills the action form's note, reviews it, types the
// confirmation and submits; it waits for the page's report of the action.
// With shot, the confirmation page is saved under that name.
func (b *browser) confirm(noteSel, note, typed, shot string) {
	b.t.Helper()
	b.do("fill in the action", chromedp.WaitVisible(chromedp.CSS("#action-form")), chromedp.SendKeys(chromedp.CSS(noteSel), note),
		chromedp.Click(chromedp.CSS("#review")), chromedp.WaitVisible(chromedp.CSS("#confirm-form")))
	if shot != "" {
		b.shot(shot)
	}
	b.do("confirm the action", chromedp.SendKeys(chromedp.CSS("#confirm"), typed), chromedp.Click(chromedp.CSS("#do")),
		chromedp.WaitVisible(chromedp.CSS("#flash")))
}

// shot saves a full-page PNG under the test's temp dir, and under
// FENCEGATE_SCREENSHOT_DIR (as dashboard-NAME.png) when that is set.
func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	paths := []string{filepath.Join(b.dir, name+".png")}
	if dir := os.Getenv("FENCEGATE_SCREENSHOT_DIR"); dir != "" {
		paths = append(paths, filepath.Join(dir, "dashboard-"+name+".png"))
	}
	for _, p := range paths {
		if err := os.WriteFile(p, png, 0o644); err != nil {
			b.t.Errorf("screenshot %s: %v", name, err)
		}
	}
	b.t.Logf("screenshot %s", paths[0])
}
