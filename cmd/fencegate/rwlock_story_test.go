//go:build unix

// Proves the read/write lock with real processes (serve, the ledger
// behind its gate, `fencegate lock --read` wrappers and a plain `lock`
// writer): two readers hold at once, each a grant on NAME/_read, and
// `fencegate status` lists them both; the
// writer waits until both are gone, then writes at a fence above theirs;
// a reader's write is refused READ_GRANT at the gate. The lease-only
// control (the ledger without its gate) lets a reader's write land: the
// read lease alone prevents nothing.
package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestReadWriteLockWrappers(t *testing.T) {
	t.Parallel()
	for _, leaseOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "fenced", true: "lease-only"}[leaseOnly], func(t *testing.T) {
			t.Parallel() // each story has its own serve, ledger and data
			readersThenWriter(t, leaseOnly)
		})
	}
}

func readersThenWriter(t *testing.T, leaseOnly bool) {
	w := newStoryWorld(t, leaseOnly)
	const name = "reports/daily"
	r1, in1 := w.writer("worker-a", "lock", name, "by reader 1", true, "--read", "--ttl", "10s")
	res1, f1, _ := permitOf(t, r1)
	r2, in2 := w.writer("worker-b", "lock", name, "by reader 2", true, "--read", "--ttl", "10s")
	res2, f2, _ := permitOf(t, r2) // both hold at once
	if res1 != name+"/_read" || res2 != res1 || f1 != f2 {
		t.Fatalf("readers on %s fence %d and %s fence %d; want both on %s/_read at one fence", res1, f1, res2, f2, name)
	}
	st := startProc(t, "status", name, "--registry", w.registry, "--token", storyTokens["ops-admin"])
	if code := st.wait(t, "status"); code != 0 || !strings.Contains(st.out.String(), "none (2 readers share it)") || strings.Count(st.out.String(), "  reader  ") != 2 {
		t.Fatalf("status exited %d:\n%s%s", code, st.out, st.err)
	}
	wr, _ := w.writer("worker-b", "lock", name, "by the writer", false, "--ttl", "10s")
	stillOut := func(who string) {
		time.Sleep(700 * time.Millisecond)
		if strings.Contains(wr.out.String(), "envelope") {
			t.Fatalf("the writer got in while %s:\n%s", who, wr.out)
		}
	}
	stillOut("two readers held")
	fmt.Fprintln(in1) // reader 1 tries to write, then exits and releases
	r1.waitOutput(t, outcomeLine)
	want := "outcome READ_GRANT"
	if leaseOnly {
		want = "outcome ACCEPTED"
	}
	if !strings.Contains(r1.out.String(), want) {
		t.Fatalf("reader 1's write: want %q:\n%s%s", want, r1.out, r1.err)
	}
	if code := r1.wait(t, "reader 1"); code != 0 {
		t.Fatalf("reader 1 exited %d:\n%s", code, r1.err)
	}
	stillOut("reader 2 held")
	fmt.Fprintln(in2)
	if code := r2.wait(t, "reader 2"); code != 0 {
		t.Fatalf("reader 2 exited %d:\n%s%s", code, r2.out, r2.err)
	}
	resW, fW, _ := permitOf(t, wr)
	if resW != name || fW <= f1 {
		t.Fatalf("the writer on %s at fence %d; want %s above the readers' %d", resW, fW, name, f1)
	}
	if code := wr.wait(t, "writer"); code != 0 || !strings.Contains(wr.out.String(), "outcome ACCEPTED") {
		t.Fatalf("the writer exited %d:\n%s%s", code, wr.out, wr.err)
	}
	if got := w.value(); got != "by the writer" {
		t.Fatalf("the ledger holds %q", got)
	}
}
