//go:build unix

// Proves the counting semaphore with real processes (serve, the ledger
// behind its gate, five `fencegate lock -n 3` wrappers): three hold a
// permit each, one of them (A) frozen with its write's envelope in hand;
// A's TTL runs out, its slot goes to the first waiting wrapper at a
// higher fence of that slot, then to the fifth; thawed, A sends its write,
// which the slot's gate refuses (STALE_OWNER) while the new holders'
// writes stand. The lease-only control (the ledger without its gate)
// lets A's late write land over them: the permit alone prevents nothing.
package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client/httpclient"
)

func TestSemaphoreFrozenPermitHolder(t *testing.T) {
	t.Parallel()
	for _, leaseOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "fenced", true: "lease-only"}[leaseOnly], func(t *testing.T) {
			t.Parallel() // each story has its own serve, ledger and data
			frozenPermit(t, leaseOnly)
		})
	}
}

var slotLine = regexp.MustCompile(`envelope fence=(\d+) pid=(\d+) resource=(\S+)`)

// permitOf waits for a wrapper's child to report its envelope: the slot
// it holds, the fence and the child's pid.
func permitOf(t *testing.T, p *proc) (slot string, fence uint64, pid int) {
	t.Helper()
	m := p.waitOutputAll(t, slotLine)
	fence, _ = strconv.ParseUint(m[1], 10, 64)
	pid, _ = strconv.Atoi(m[2])
	return m[3], fence, pid
}

func frozenPermit(t *testing.T, leaseOnly bool) {
	w := newStoryWorld(t, leaseOnly)
	const sem = "jobs/pool"
	lock := []string{"-n", "3"}
	a, aIn := w.writer("worker-a", "lock", sem, "100 (by A, before its pause)", true, append(lock, "--ttl", "2s", "--grace", "20s")...)
	aSlot, aFence, aChild := permitOf(t, a)
	freeze(t, a, aChild, syscall.SIGSTOP)
	holders := map[string]bool{aSlot: true}
	var held []func()
	defer func() { // the holders' children write and exit (they ignore SIGTERM)
		for _, release := range held {
			release()
		}
	}()
	for i := range 2 {
		p, in := w.writer("worker-b", "lock", sem, fmt.Sprintf("holder %d", i), true, append(lock, "--ttl", "60s")...)
		slot, _, _ := permitOf(t, p)
		if holders[slot] {
			t.Fatalf("slot %s handed out twice", slot)
		}
		holders[slot] = true
		held = append(held, func() { fmt.Fprintln(in) })
	}
	st := startProc(t, "status", sem, "--registry", w.registry, "--token", storyTokens["ops-admin"])
	if code := st.wait(t, "status"); code != 0 || !strings.Contains(st.out.String(), "permits:      3 (3 held)") {
		t.Fatalf("status exited %d:\n%s%s", code, st.out, st.err)
	}
	// Two more wrappers wait; the first is served A's slot once A's 2 s
	// lease and lock-delay are over (A is frozen: it cannot renew), the
	// fifth after it, on the same slot.
	d, _ := w.writer("worker-b", "lock", sem, "400 (by D)", false, append(lock, "--ttl", "10s")...)
	w.waitQueuedOrHolding(sem, d) // D queues first
	e, eIn := w.writer("worker-b", "lock", sem, "500 (by E, A's slot's newest holder)", true, append(lock, "--ttl", "10s")...)
	dSlot, dFence, _ := permitOf(t, d)
	if dSlot != aSlot || dFence <= aFence {
		t.Fatalf("D got %s at fence %d; want A's slot %s above fence %d", dSlot, dFence, aSlot, aFence)
	}
	if code := d.wait(t, "D"); code != 0 || !strings.Contains(d.out.String(), "outcome ACCEPTED") {
		t.Fatalf("D exited %d:\n%s%s", code, d.out, d.err)
	}
	eSlot, eFence, _ := permitOf(t, e)
	if eSlot != aSlot || eFence <= dFence {
		t.Fatalf("E got %s at fence %d; want A's slot %s above D's fence %d", eSlot, eFence, aSlot, dFence)
	}
	fmt.Fprintln(eIn)
	e.waitOutput(t, regexp.MustCompile(`outcome (\S+)`))
	if !strings.Contains(e.out.String(), "outcome ACCEPTED") {
		t.Fatalf("E's write:\n%s%s", e.out, e.err)
	}

	w.thawLateWriter(a, aIn, aChild, "the frozen permit holder", "500 (by E, A's slot's newest holder)")
}

// waitQueuedOrHolding waits until the registry lists a waiter on the
// semaphore sem, or p's child holds a permit: a wrapper started after it
// then queues behind it, however slowly p's process started.
func (w *storyWorld) waitQueuedOrHolding(sem string, p *proc) {
	w.t.Helper()
	rc, err := httpclient.NewClient(w.registry, httpclient.WithBearerToken(storyTokens["ops-admin"]))
	if err != nil {
		w.t.Fatal(err)
	}
	for deadline := time.Now().Add(procWaitMax); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if slotLine.MatchString(p.out.String()) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		v, err := rc.LockStatus(ctx, sem)
		cancel()
		if err == nil && len(v.Waiters) > 0 {
			return
		}
	}
	w.t.Fatalf("%s never queued on %s nor held a permit:\n%s%s", p.cmd.Args[1:3], sem, p.out, p.err)
}
