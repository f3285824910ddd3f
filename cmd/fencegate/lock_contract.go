package main

import (
	"fmt"
	"strings"
)

// The contract of `fencegate lock` and `fencegate elect` with their child:
// what the wrapper exits with, what becomes of the child and what it
// started, when the child gets SIGTERM, and when the next waiter's child
// starts — for every way a run can end. One table feeds the help's exit
// status section, docs/operations.md ("What happens when") and the
// contract test (lock_contract_test.go), which runs every row with real
// processes at the shortest, a typical and a long TTL, so the three
// cannot disagree.

// exitKind is one rule of the exit status.
type exitKind int

// The exit status rules, in the help's order.
const (
	exitChild   exitKind = iota // the child's own status
	exitSignal                  // 128+N for a signal N
	exitLost                    // 1: lost, and the child exited 0
	exitNothing                 // 1: nothing ran
	exitUsage                   // 2
)

// exitRule is one line of the exit status: the status, and when.
type exitRule struct {
	kind         exitKind
	status, when string
}

// lockExitRules is the wrapper's exit status, in the help.
var lockExitRules = []exitRule{
	{exitChild, "N", "the child exited N while the lease held (0 included)"},
	{exitSignal, "128+N", "a signal N ended the child (143: the SIGTERM the wrapper sends when ownership is lost or it is told to stop)"},
	{exitLost, "1", "ownership was lost while the child ran, and the child then exited 0"},
	{exitNothing, "1", "the lease could not be acquired, or the registry refused the identity (FORBIDDEN, UNAUTHENTICATED): nothing ran"},
	{exitUsage, "2", "a usage error, found before any network call"},
}

// exitStatus is the status the rules give a child that exited code, or
// that signal ended (signal ≠ 0), when the run may end as kinds say; -1
// when no rule of kinds covers it.
func exitStatus(kinds []exitKind, code int, signal int) int {
	has := func(k exitKind) bool {
		for _, x := range kinds {
			if x == k {
				return true
			}
		}
		return false
	}
	switch {
	case signal != 0 && has(exitSignal):
		return 128 + signal
	case signal != 0:
		return -1
	case code == 0 && has(exitLost):
		return 1
	case has(exitChild):
		return code
	}
	return -1
}

// exitStatusHelp renders lockExitRules for --help.
func exitStatusHelp() string {
	var b strings.Builder
	b.WriteString("Exit status:\n")
	for _, r := range lockExitRules {
		line := fmt.Sprintf("  %-6s", r.status)
		for _, w := range strings.Fields(r.when) {
			if len(line)+1+len(w) > helpWidth {
				b.WriteString(line + "\n")
				line = strings.Repeat(" ", 9)
			} else {
				line += " "
			}
			line += w
		}
		b.WriteString(line + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// helpWidth is where exitStatusHelp wraps its lines.
const helpWidth = 78

// contractRow is one way a run ends.
type contractRow struct {
	event string     // what happens
	exits []exitKind // the rules its exit status follows; none: the wrapper is killed
	child string     // what becomes of the child and the processes it started
	term  string     // when the child gets SIGTERM
	next  string     // when the next waiter's child starts
}

// The ends of a run the contract names (contractRow.event).
const (
	evExit0         = "the child exits 0"
	evExit3         = "the child exits 3"
	evSignal        = "a signal ends the child (SIGKILL)"
	evFrozen        = "the wrapper and its child are frozen (SIGSTOP) past the lease, then thawed"
	evBreak         = "an admin breaks the lease (`fencegate break`)"
	evRegistryKill  = "the registry is killed (SIGKILL), then restarted"
	evRegistryStop  = "the registry is frozen (SIGSTOP), then thawed"
	evWrapperKill   = "the wrapper is killed (SIGKILL)"
	evWrapperSIGINT = "the wrapper gets SIGINT (Ctrl-C)"
	evWrapperTERM   = "the wrapper gets SIGTERM"
)

// Words shared by rows.
const (
	groupEnded   = "exits; what it started in its process group gets SIGTERM, SIGKILL after `--grace`, before the release"
	groupStopped = "SIGTERM to its process group, SIGKILL after `--grace`; the release waits until the group is gone"
	atRelease    = "at once: the release follows the end of the child's group"
	afterExpiry  = "once the registry's deadline for the lease and lock-delay have passed"
)

// lockContract is the table, in the order docs/operations.md shows it.
var lockContract = []contractRow{
	{evExit0, []exitKind{exitChild}, groupEnded, "none (its leftovers get it)", atRelease},
	{evExit3, []exitKind{exitChild}, groupEnded, "none (its leftovers get it)", atRelease},
	{evSignal, []exitKind{exitSignal}, groupEnded, "none (its leftovers get it)", atRelease},
	{evFrozen, lostExits, "runs on, frozen, while the registry hands the lease on: the gate refuses its late writes",
		"the moment the wrapper runs again (its deadline has passed)", afterExpiry + ", while the old child is still frozen"},
	{evBreak, lostExits, groupStopped, "at the wrapper's next renewal (LEASE_BROKEN), within a third of the TTL",
		"at once: the break hands the lease on in the same write, without lock-delay"},
	{evRegistryKill, lostExits, groupStopped, "at the next renewal, which fails: by the lease's local deadline at the latest",
		"once the registry is back: at the old holder's release, or " + afterExpiry},
	{evRegistryStop, lostExits, groupStopped, "when a renewal goes unanswered (2 s), by the lease's local deadline at the latest",
		"once the registry is thawed: at the old holder's release, or " + afterExpiry},
	{evWrapperKill, nil, "its guardian kills the child's whole process group (SIGKILL) within a second",
		"none: SIGKILL at once", afterExpiry + " (nobody released it)"},
	{evWrapperSIGINT, stoppedExits, groupStopped, "at once", atRelease},
	{evWrapperTERM, stoppedExits, groupStopped, "at once", atRelease},
}

// The rules rows share.
var (
	lostExits    = []exitKind{exitLost, exitChild, exitSignal}
	stoppedExits = []exitKind{exitChild, exitSignal}
)

// contractRowOf is the row of event.
func contractRowOf(event string) contractRow {
	for _, r := range lockContract {
		if r.event == event {
			return r
		}
	}
	panic("fencegate: no contract row " + event)
}

// exitWords is a row's exit status in words, for the docs.
func exitWords(kinds []exitKind) string {
	if len(kinds) == 0 {
		return "none: killed (137 to its parent)"
	}
	lost := exitStatus(kinds, 0, 0) == 1
	var parts []string
	for _, k := range kinds {
		switch {
		case k == exitLost:
			parts = append(parts, "1 if the child then exits 0")
		case k == exitChild && lost:
			parts = append(parts, "its status if another")
		case k == exitChild:
			parts = append(parts, "the child's status")
		case k == exitSignal:
			parts = append(parts, "128+N if a signal N ends it")
		}
	}
	return strings.Join(parts, "; ")
}

// contractMarkdown renders lockContract as docs/operations.md holds it.
func contractMarkdown() string {
	var b strings.Builder
	b.WriteString("| what happens | `lock`/`elect` exits | the child and what it started | SIGTERM to the child | the next waiter's child starts |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, r := range lockContract {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.event, exitWords(r.exits), r.child, r.term, r.next)
	}
	return b.String()
}
