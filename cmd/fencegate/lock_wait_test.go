//go:build unix

// Proves, with a real serve process and real lock processes, the two
// first-hour defects of `fencegate lock`: a lock that queued longer than
// its own TTL runs its child (it used to get the lease and give it up with
// "local deadline passed"), with a 3 s and with the default TTL; and a lock
// whose child settled its envelopes lets go of the lease when the child
// exits, while one whose child left an envelope unsettled waits for that
// envelope's proof (the negative control: the drain that used to hold
// every lock for about three seconds).
package main

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestLockQueuedPastItsTTLRunsItsChild(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ttl   []string // the lock flags: none is the default, 15 s
		holdS string   // how long the holder's child runs: longer than the TTL
	}{
		{"ttl 3s", []string{"--ttl", "3s"}, "5"},
		{"default ttl", nil, "17"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, url := serveProc(t)
			holder := lockProc(t, url, append(append([]string{"r/h"}, tc.ttl...), "--", "sh", "-c", "echo holding; sleep "+tc.holdS)...)
			holder.waitOutput(t, regexp.MustCompile(`holding`))
			waiter := lockProc(t, url, append(append([]string{"r/h"}, tc.ttl...), "--", "echo", "ran")...)
			if code := waiter.wait(t, "waiter"); code != 0 || !strings.Contains(waiter.out.String(), "ran") {
				t.Fatalf("the waiter exited %d without running its child:\n%s%s", code, waiter.out, waiter.err)
			}
			if code := holder.wait(t, "holder"); code != 0 {
				t.Fatalf("holder exited %d:\n%s%s", code, holder.out, holder.err)
			}
		})
	}
}

// settleScript takes one envelope and, with "settle" as its argument,
// reports the resource's answer, as a child that wrote would.
const settleScript = `"$FG" envelope --seq 1 --payload-digest sha256:2222222222222222222222222222222222222222222222222222222222222222 || exit 3
if [ "$1" = settle ]; then "$FG" envelope settle --seq 1 --outcome ACCEPTED || exit 4; fi`

// validUntilRe and heldUntilRe find how long an envelope's HELD evidence
// lasts: its status proof's validUntil or, with no status (a fresh
// grant), the grant's own heldUntil.
var (
	validUntilRe = regexp.MustCompile(`validUntil: ([0-9T:.\-]+Z)`)
	heldUntilRe  = regexp.MustCompile(`heldUntil: ([0-9T:.\-]+Z)`)
)

func TestLockLetsGoWhenItsChildExits(t *testing.T) {
	t.Parallel()
	// Long status proofs: a drain would hold the lease for about 9 s.
	_, url := serveProc(t, "--status-proof-ttl-ms", "8000")
	for _, tc := range []struct {
		arg   string
		drain bool
	}{{"settle", false}, {"leave-unsettled", true}} {
		t.Run(tc.arg, func(t *testing.T) {
			t.Parallel()
			resource := "r/" + tc.arg
			first := lockProc(t, url, resource, "--ttl", "30s", "--", "sh", "-c", settleScript, "sh", tc.arg)
			if code := first.wait(t, "lock"); code != 0 {
				t.Fatalf("lock exited %d:\n%s%s", code, first.out, first.err)
			}
			m := validUntilRe.FindStringSubmatch(first.out.String())
			if m == nil {
				m = heldUntilRe.FindStringSubmatch(first.out.String())
			}
			if m == nil {
				t.Fatalf("no HELD evidence in the envelope:\n%s", first.out)
			}
			validUntil, err := time.Parse(time.RFC3339Nano, m[1])
			if err != nil {
				t.Fatal(err)
			}
			drained := strings.Contains(first.err.String(), "not settled")
			next := lockProc(t, url, resource, "--no-wait", "--", "true")
			if code := next.wait(t, "next lock"); code != 0 {
				t.Fatalf("the resource is not free after the first lock exited (%d):\n%s", code, next.err)
			}
			freedBeforeProofLapsed := time.Now().Before(validUntil)
			if tc.drain != drained || tc.drain == freedBeforeProofLapsed {
				t.Fatalf("child %s: drained %v, resource free before the envelope's proof lapsed (%s) %v; want drained %v:\n%s",
					tc.arg, drained, validUntil.Format(time.StampMilli), freedBeforeProofLapsed, tc.drain, first.err)
			}
		})
	}
}
