//go:build unix

// Proves `fencegate break` of a lock set's member with real processes: a
// `fencegate lock accounts/a accounts/b` wrapper holds the set (TTL 10 s)
// with its child running; an admin breaks accounts/a; the answer names
// both members, accounts/b is free the moment the break answers (a
// `lock accounts/b --no-wait` wrapper runs at once, at a higher fence) —
// not after the set's next renewal or its TTL, as with the member-only
// break, under which this test fails (accounts/b still held by the
// set) — and the set's wrapper stops its child and exits when its next
// renewal answers LEASE_BROKEN.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client/httpclient"
)

func TestBreakLockSetMemberEndsTheSet(t *testing.T) {
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
	reg := serve.waitOutput(t, listenLine)

	set := startProc(t, "lock", "accounts/a", "accounts/b", "--registry", reg, "--token", storyTokens["worker-a"], "--ttl", "10s", "--grace", "1s",
		"--", "sh", "-c", `echo "held fence=$FENCEGATE_MEMBER_1_FENCE"; exec sleep 60`)
	setFence, _ := strconv.Atoi(set.waitOutput(t, regexp.MustCompile(`held fence=(\d+)`)))

	brk := startProc(t, "break", "accounts/a", "--note", "set wrapper stuck, test", "--registry", reg, "--token", storyTokens["ops-admin"])
	if code := brk.wait(t, "break"); code != 0 {
		t.Fatalf("break exited %d:\n%s%s", code, brk.out, brk.err)
	}
	broke := time.Now()
	for _, want := range []string{"worker-a's lock set accounts/a accounts/b", "on accounts/a", "on accounts/b"} {
		if !strings.Contains(brk.out.String(), want) {
			t.Errorf("break's output lacks %q:\n%s", want, brk.out)
		}
	}
	rc, err := httpclient.NewClient(reg, httpclient.WithBearerToken(storyTokens["worker-b"]))
	if err != nil {
		t.Fatal(err)
	}
	st, err := rc.LockStatus(context.Background(), "accounts/b")
	if err != nil || st.Holder != nil {
		t.Fatalf("accounts/b right after the break of accounts/a: %v, holder %+v; want free (the whole set ended in the break's write)", err, st.Holder)
	}
	b := startProc(t, "lock", "accounts/b", "--no-wait", "--registry", reg, "--token", storyTokens["worker-b"], "--", "sh", "-c", `echo "b fence=$FENCEGATE_FENCE"`)
	if code := b.wait(t, "lock accounts/b"); code != 0 {
		t.Fatalf("lock accounts/b --no-wait after the break exited %d:\n%s%s", code, b.out, b.err)
	}
	if bFence, _ := strconv.Atoi(b.waitOutput(t, regexp.MustCompile(`b fence=(\d+)`))); bFence <= setFence {
		t.Fatalf("accounts/b's next fence %d is not above the set's %d", bFence, setFence)
	}
	if code := set.wait(t, "the set's wrapper"); code == 0 {
		t.Fatalf("the broken set's wrapper exited 0:\n%s%s", set.out, set.err)
	}
	if took := time.Since(broke); took > 9*time.Second {
		t.Errorf("the set's wrapper stopped %v after the break (TTL 10 s): it should learn at its next renewal", took)
	}
	t.Logf("the set's wrapper stopped %v after the break:\n%s", time.Since(broke).Round(time.Millisecond), set.err)
}
