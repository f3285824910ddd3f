//go:build unix

// Proves `fencegate break` with real processes: holder A (fencegate lock)
// is frozen with its write's envelope in hand while B waits behind it; an
// admin breaks A's lock, B is served at once at a higher fence and
// writes; A is thawed and sends its write, which the gate refuses
// (STALE_OWNER): B's result stands. A worker may not break a lock.
package main

import (
	"strings"
	"syscall"
	"testing"
)

func TestBreakFrozenHolder(t *testing.T) {
	t.Parallel()
	w := newStoryWorld(t, false)
	a, aIn := w.writer("worker-a", "lock", "jobs/report", "100 (by A, before its pause)", true, "--ttl", "60s", "--grace", "20s")
	aFence, aChild := childPid(t, a)
	freeze(t, a, aChild, syscall.SIGSTOP)
	b, _ := w.writer("worker-b", "lock", "jobs/report", "200 (by B)", false, "--ttl", "10s")

	refused := startProc(t, "break", "jobs/report", "--note", "not mine", "--registry", w.registry, "--token", storyTokens["worker-b"])
	if code := refused.wait(t, "break by a worker"); code == 0 || !strings.Contains(refused.err.String(), "FORBIDDEN") {
		t.Fatalf("a worker broke a lock (exit %d):\n%s%s", code, refused.out, refused.err)
	}
	brk := startProc(t, "break", "jobs/report", "--note", "worker A frozen, test", "--registry", w.registry, "--token", storyTokens["ops-admin"])
	if code := brk.wait(t, "break"); code != 0 || !strings.Contains(brk.out.String(), "broke worker-a's lease") {
		t.Fatalf("break exited %d:\n%s%s", code, brk.out, brk.err)
	}
	bFence, _ := childPid(t, b)
	if code := b.wait(t, "B"); code != 0 || !strings.Contains(b.out.String(), "outcome ACCEPTED") || bFence <= aFence {
		t.Fatalf("B exited %d at fence %d (A's %d):\n%s%s", code, bFence, aFence, b.out, b.err)
	}
	w.thawLateWriter(a, aIn, aChild, "the broken holder", "200 (by B)")
}
