//go:build unix

// Proves leader election with real processes, the split-brain story:
// leader A (fencegate elect) takes the envelope for its write and is
// frozen with it, wrapper and child, past its lease; candidate B becomes
// leader at a higher term and writes; A is thawed and sends its write.
// The gate refuses it (STALE_OWNER) and B's result stands. `elect
// --observe` reports both terms. The negative control runs the same story
// against the ledger without its gate: A's late write lands over B's.
package main

import (
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestElectDeposedLeaderIsFenced(t *testing.T) {
	// Not in parallel with the package's other tests (some build the
	// binary): B holds a 2 s lease, which a saturated machine could let lapse.
	// The two stories share nothing and run at once.
	for _, leaseOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "fenced", true: "lease-only"}[leaseOnly], func(t *testing.T) {
			t.Parallel() // each story has its own serve, ledger and data
			deposedLeader(t, leaseOnly)
		})
	}
}

func deposedLeader(t *testing.T, leaseOnly bool) {
	w := newStoryWorld(t, leaseOnly)
	observer := startProc(t, "elect", "--observe", "election/report", "--registry", w.registry, "--token", storyTokens["ops-admin"])
	a, aIn := w.writer("worker-a", "elect", "election/report", "100 (by A, before its pause)", true, "--ttl", "2s", "--grace", "20s")
	aFence, aChild := childPid(t, a)
	observer.waitOutput(t, regexp.MustCompile(`leader worker-a, term (\d+)`))
	freeze(t, a, aChild, syscall.SIGSTOP)
	time.Sleep(4 * time.Second) // past A's 2 s lease and lock-delay

	b, _ := w.writer("worker-b", "elect", "election/report", "200 (by B)", false, "--ttl", "2s")
	bFence, _ := childPid(t, b)
	if code := b.wait(t, "leader B"); code != 0 || !strings.Contains(b.out.String(), "outcome ACCEPTED") {
		t.Fatalf("B exited %d:\n%s%s", code, b.out, b.err)
	}
	if bFence <= aFence {
		t.Fatalf("B's term %d is not above A's %d", bFence, aFence)
	}
	if !w.thawLateWriter(a, aIn, aChild, "the deposed leader", "200 (by B)") {
		return
	}
	observer.waitOutput(t, regexp.MustCompile(fmt.Sprintf(`leader worker-b, term (%d)`, bFence)))
}
