// Proves, by fuzzing the wire form of a registry command (its JSON bytes
// and its proof), that a gate applies a command only when its bytes are
// exactly the ones the registry signed, that the parser never panics, and
// that every parse failure wraps ErrInvalid. The negative control of the
// check is TestCommandAppliedOnlyWhenGenuine's forger-trusting gate.
package report

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func FuzzCommand(f *testing.F) {
	e := newCmdEnv(f, nil)
	genuine := e.command(f, e.reg, nil)
	f.Add(genuine.Command, genuine.Proof)
	f.Add(strings.Replace(genuine.Command, `"floor":3`, `"floor":30`, 1), genuine.Proof)
	f.Add(strings.Replace(genuine.Command, `"gate":"gate-1"`, `"gate":"gate-1","gate":"gate-2"`, 1), genuine.Proof)
	f.Add(strings.Replace(genuine.Command, `"gate"`, `"Gate"`, 1), genuine.Proof)
	f.Add(genuine.Command+" ", genuine.Proof)
	f.Add(genuine.Command+"{}", genuine.Proof)
	f.Add(genuine.Command, genuine.Proof[:len(genuine.Proof)-2])
	f.Add("{}", "")
	f.Fuzz(func(t *testing.T, command, proof string) {
		if _, err := ParseCommand(command); err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("ParseCommand error without ErrInvalid: %v", err)
		}
		e.res.calls = nil
		res, _ := e.r.apply(context.Background(), SignedCommand{Command: command, Proof: proof})
		if res.Outcome == "" {
			t.Fatalf("no outcome for %q", command)
		}
		applied := res.Outcome == ResultApplied
		if applied != (len(e.res.calls) == 1) {
			t.Fatalf("outcome %s with %d resumes", res.Outcome, len(e.res.calls))
		}
		if applied && command != genuine.Command {
			t.Fatalf("applied a command the registry did not sign:\n%s\nsigned:\n%s", command, genuine.Command)
		}
	})
}
