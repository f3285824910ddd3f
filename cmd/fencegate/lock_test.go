//go:build unix

// Proves `fencegate lock` with real child processes and a real registry:
// the child runs with its grant in the environment and gets envelopes
// from the helper, and the wrapper exits with its status and releases;
// when the registry is stopped mid-run the child gets SIGTERM, can no
// longer get an envelope, and its status is the wrapper's; a child that
// ignores SIGTERM is killed after the grace period; a held resource with
// --no-wait runs nothing.
package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const lockToken = serveToken

// lockServe starts a registry for the lock tests and makes the test binary
// usable as the child's fencegate.
func lockServe(t *testing.T) *served {
	t.Setenv(envTestAsCLI, "1")
	t.Setenv("FG", os.Args[0])
	dir := t.TempDir()
	return startServe(t, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0",
		"--token-file", writeTokenFile(t, dir), "--unsafe-no-fsync", "--authz-open")
}

// lockAsync runs `fencegate lock` in-process until it exits or ctx ends.
func lockAsync(ctx context.Context, s *served, args ...string) (stdout, stderr *syncBuffer, done <-chan int) {
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	ch := make(chan int, 1)
	go func() {
		ch <- run(ctx, append([]string{"lock", "--registry", s.url, "--token", lockToken}, args...), stdout, stderr)
	}()
	return stdout, stderr, ch
}

func waitExit(t *testing.T, done <-chan int, what string, out, errOut *syncBuffer) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: fencegate lock did not exit:\n%s%s", what, out, errOut)
		return -1
	}
}

func waitFor(t *testing.T, b *syncBuffer, want string) {
	t.Helper()
	for i := 0; i < 600 && !strings.Contains(b.String(), want); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(b.String(), want) {
		t.Fatalf("never saw %q in:\n%s", want, b)
	}
}

const lockScript = `echo "fence=$FENCEGATE_FENCE resource=$FENCEGATE_RESOURCE owner=$FENCEGATE_OWNER op=$FENCEGATE_OPERATION_ID"
echo "$FENCEGATE_GRANT" | grep -q '^schema: lockGrant.v1$' && echo grant-ok
"$FG" envelope --seq 1 --payload-digest sha256:1111111111111111111111111111111111111111111111111111111111111111
exit 7`

func TestLockRunsChildAndReleases(t *testing.T) {
	s := lockServe(t)
	out, errOut, done := lockAsync(context.Background(), s, "inv/lock", "--op", "nightly", "--", "sh", "-c", lockScript)
	if code := waitExit(t, done, "first", out, errOut); code != 7 {
		t.Fatalf("exit %d, want the child's 7:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"fence=1 resource=inv/lock owner=worker-1 op=nightly", "grant-ok", `"fenceToken":1`, `"segmentSeq":1`, `"grantProof":"sig:`, `heldUntil: `} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
	// Released: the next lock gets the resource at once, under fence 2.
	out, errOut, done = lockAsync(context.Background(), s, "inv/lock", "--no-wait", "--", "sh", "-c", `echo "fence=$FENCEGATE_FENCE"`)
	if code := waitExit(t, done, "second", out, errOut); code != 0 || !strings.Contains(out.String(), "fence=2") {
		t.Fatalf("after release: exit %d\n%s%s", code, out, errOut)
	}
}

func TestLockNoWaitOnHeldResourceRunsNothing(t *testing.T) {
	s := lockServe(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hOut, hErr, held := lockAsync(ctx, s, "inv/busy", "--", "sh", "-c", "echo holding; sleep 30")
	waitFor(t, hOut, "holding")
	out, errOut, done := lockAsync(context.Background(), s, "inv/busy", "--no-wait", "--", "sh", "-c", "echo ran")
	if code := waitExit(t, done, "busy", out, errOut); code != 1 || strings.Contains(out.String(), "ran") || !strings.Contains(errOut.String(), "busy") {
		t.Fatalf("--no-wait on a held resource: exit %d\n%s%s", code, out, errOut)
	}
	cancel() // the first lock stops its child (SIGTERM) and releases
	if code := waitExit(t, held, "holder", hOut, hErr); code != 128+15 {
		t.Fatalf("holder told to stop: exit %d, want 143 (its child's SIGTERM)\n%s", code, hErr)
	}
}

// TestLockStopsChildWhenRegistryStops: the registry goes away mid-run;
// the next renewal has no answer, ownership becomes uncertain, and the
// child is stopped and refused envelopes.
func TestLockStopsChildWhenRegistryStops(t *testing.T) {
	s := lockServe(t)
	script := `trap '"$FG" envelope --seq 1 --payload-digest sha256:1111111111111111111111111111111111111111111111111111111111111111 >/dev/null 2>&1 && echo ENVELOPE-AFTER-LOSS || echo envelope-refused; echo got-term; exit 42' TERM
echo started
while :; do sleep 0.1; done`
	out, errOut, done := lockAsync(context.Background(), s, "inv/stop", "--ttl", "3s", "--", "sh", "-c", script)
	waitFor(t, out, "started")
	t0 := time.Now()
	s.stop() // the registry dies while the child runs
	t.Logf("serve stopped in %s", time.Since(t0))
	code := waitExit(t, done, "registry stopped", out, errOut)
	t.Logf("lock exited %s after the stop", time.Since(t0))
	if code != 42 || !strings.Contains(out.String(), "got-term") {
		t.Fatalf("exit %d, want the child's 42 after SIGTERM:\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out.String(), "envelope-refused") || strings.Contains(out.String(), "ENVELOPE-AFTER-LOSS") {
		t.Errorf("the child got an envelope after ownership was lost:\n%s", out)
	}
	if !regexp.MustCompile(`ownership of inv/stop is no longer certain \((OWNERSHIP_UNKNOWN|EXPIRED)\)`).MatchString(errOut.String()) {
		t.Errorf("the wrapper did not say why it stopped the child:\n%s", errOut)
	}
}

func TestLockKillsChildThatIgnoresTerm(t *testing.T) {
	s := lockServe(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut, done := lockAsync(ctx, s, "inv/stubborn", "--grace", "300ms", "--", "sh", "-c", `trap '' TERM; echo started; while :; do sleep 0.1; done`)
	waitFor(t, out, "started")
	cancel()
	if code := waitExit(t, done, "stubborn", out, errOut); code != 128+9 || !strings.Contains(errOut.String(), "SIGKILL") {
		t.Fatalf("exit %d, want 137 (SIGKILL after the grace period):\n%s", code, errOut)
	}
	out, errOut, done = lockAsync(context.Background(), s, "inv/stubborn", "--no-wait", "--", "true")
	if code := waitExit(t, done, "after kill", out, errOut); code != 0 {
		t.Fatalf("not released after the kill: exit %d\n%s", code, errOut)
	}
}

func TestLockUsage(t *testing.T) {
	for _, args := range [][]string{{"lock", "inv/x"}, {"lock", "--", "true"}, {"lock", "Bad/Name", "--", "true"}} {
		if _, errOut, code := runCLI(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, errOut)
		}
	}
}

func TestLockDeadRegistryFailsFast(t *testing.T) {
	out, errOut, code := runCLI("lock", "inv/dead", "--registry", "http://"+freeAddr(t), "--token", lockToken, "--", "sh", "-c", "echo ran")
	if code != 1 || strings.Contains(out, "ran") || !strings.Contains(errOut, "not ready") || !strings.Contains(errOut, "check --registry") {
		t.Fatalf("a dead registry: exit %d\n%s%s", code, out, errOut)
	}
}
