//go:build unix

// Proves seeing locks with real processes: while one lock holds jobs/x
// and another waits for it, `fencegate status` names the holder, since
// when, the time left, and the waiter with how long it has waited (in
// text and as JSON); `fencegate ls` lists it under its prefix; and a lock
// that will not wait is refused in one line that names the holder, with
// the stable code and nothing else.
package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/fencegate/fencegate/wire"
)

func TestStatusLsAndTheBusyLine(t *testing.T) {
	_, url := serveProc(t)
	holder := lockProc(t, url, "jobs/x", "--", "sh", "-c", "echo holding; sleep 60")
	defer func() { _ = holder.cmd.Process.Signal(syscall.SIGTERM) }()
	holder.waitOutput(t, regexp.MustCompile(`holding`))
	waiter := lockProc(t, url, "jobs/x", "--ttl", "3s", "--", "true")
	view := func(args ...string) string {
		p := startProc(t, append(args, "--registry", url, "--token", lockToken)...)
		if code := p.wait(t, args[0]); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, p.out, p.err)
		}
		return p.out.String()
	}
	var v wire.LockStatus
	for range 100 { // until the waiter has joined the queue
		if err := json.Unmarshal([]byte(view("status", "jobs/x", "-o", "json")), &v); err != nil {
			t.Fatal(err)
		}
		if len(v.Waiters) == 1 {
			break
		}
	}
	if v.Holder == nil || v.Holder.Owner != "worker-1" || v.Holder.Fence != 1 || len(v.Waiters) != 1 || v.Waiters[0].Since.IsZero() {
		t.Fatalf("status as JSON: %+v", v)
	}
	text := view("status", "jobs/x")
	for _, want := range []string{"holder:       worker-1", "held since:", "lease left:", "waiters:      1", "1. worker-1, class lock, waiting "} {
		if !strings.Contains(text, want) {
			t.Errorf("status lacks %q:\n%s", want, text)
		}
	}
	if ls := view("ls", "jobs/"); !regexp.MustCompile(`(?m)^jobs/x\s+worker-1\s+1\s`).MatchString(ls) {
		t.Errorf("ls does not list jobs/x held by worker-1:\n%s", ls)
	}
	if ls := view("ls", "other/"); strings.Contains(ls, "jobs/x") {
		t.Errorf("ls other/ lists jobs/x:\n%s", ls)
	}
	busy := lockProc(t, url, "jobs/x", "--no-wait", "--", "echo", "ran")
	if code := busy.wait(t, "busy lock"); code != 1 || strings.Contains(busy.out.String(), "ran") {
		t.Fatalf("--no-wait on a held resource: exit %d\n%s%s", code, busy.out, busy.err)
	}
	line := regexp.MustCompile(`^fencegate lock: jobs/x is held by worker-1 since \d\d:\d\d:\d\d UTC \(lease l1-[0-9a-f]+, fence 1, [0-9.]+m?s left; 1 waiter\) \[BUSY\]\n$`)
	if !line.MatchString(busy.err.String()) {
		t.Fatalf("the refusal is not one line naming the holder:\n%q", busy.err.String())
	}
	_ = waiter
}
