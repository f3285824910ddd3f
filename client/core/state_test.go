// This file proves the lease state machine is exactly the table the spec
// and DESIGN.md describe: every legal transition lands where it should with
// the right effects, and every other (state, event) pair panics.
package core

import (
	"testing"

	"github.com/fencegate/fencegate/internal/assert"
)

type transition struct {
	from LeaseState
	ev   Event
	to   LeaseState
	fx   Effects
}

var (
	fxNone    = Effects{}
	fxNew     = Effects{NewCtx: true}
	fxLose    = Effects{CancelCtx: true, Query: true}
	fxEndHeld = Effects{CancelCtx: true, Done: true}
	fxEnd     = Effects{Done: true}
)

// legal is written out by hand from the spec, independently of the table.
var legal = []transition{
	{StateRequested, EvAcquireOK, StateHeld, fxNew},
	{StateRequested, EvAcquireLost, StateRequested, fxNone},
	{StateHeld, EvRenewDue, StateRenewing, fxNone},
	{StateHeld, EvDeadline, StateUnknown, fxLose},
	{StateHeld, EvReleaseOK, StateReleased, fxEndHeld},
	{StateHeld, EvReleaseLost, StateUnknown, fxLose},
	{StateHeld, EvReleaseRefused, StateExpired, fxEndHeld},
	{StateRenewing, EvRenewOK, StateHeld, fxNone},
	{StateRenewing, EvRenewLost, StateUnknown, fxLose},
	{StateRenewing, EvRenewLate, StateUnknown, fxLose},
	{StateRenewing, EvRenewRefused, StateExpired, fxEndHeld},
	{StateRenewing, EvDeadline, StateUnknown, fxLose},
	{StateUnknown, EvQueryHeld, StateHeld, fxNew},
	{StateUnknown, EvQueryExpired, StateExpired, fxEnd},
	{StateUnknown, EvQueryUnavailable, StateUnknown, fxNone},
	{StateUnknown, EvReleaseOK, StateReleased, fxEnd},
	{StateUnknown, EvReleaseLost, StateUnknown, fxNone},
	{StateUnknown, EvReleaseRefused, StateExpired, fxEnd},
}

func TestLegalTransitions(t *testing.T) {
	for _, tc := range legal {
		t.Run(string(tc.from)+"/"+string(tc.ev), func(t *testing.T) {
			m := Machine{state: tc.from}
			to, fx := m.Step(tc.ev)
			if to != tc.to || m.state != tc.to {
				t.Fatalf("%s --%s--> %s, want %s", tc.from, tc.ev, to, tc.to)
			}
			if fx != tc.fx {
				t.Fatalf("%s --%s--> %s: effects %+v, want %+v", tc.from, tc.ev, to, fx, tc.fx)
			}
		})
	}
}

func TestIllegalTransitionsPanic(t *testing.T) {
	isLegal := map[[2]string]bool{}
	for _, tc := range legal {
		isLegal[[2]string{string(tc.from), string(tc.ev)}] = true
	}
	illegal := 0
	for _, s := range States {
		for _, ev := range Events {
			if isLegal[[2]string{string(s), string(ev)}] {
				continue
			}
			illegal++
			func() {
				defer func() {
					r := recover()
					if _, ok := r.(assert.Failure); !ok {
						t.Errorf("%s --%s-->: want an assertion failure, got %v", s, ev, r)
					}
				}()
				m := Machine{state: s}
				m.Step(ev)
			}()
		}
	}
	if want := len(States)*len(Events) - len(legal); illegal != want {
		t.Fatalf("checked %d illegal pairs, want %d", illegal, want)
	}
}

// TestTableHasNoExtraTransitions: the table allows nothing the hand-written
// list does not, so the two cannot drift apart silently.
func TestTableHasNoExtraTransitions(t *testing.T) {
	n := 0
	for _, evs := range transitions {
		n += len(evs)
	}
	if n != len(legal) {
		t.Fatalf("table has %d transitions, the spec list %d", n, len(legal))
	}
}

func TestTerminalAndCertain(t *testing.T) {
	for _, s := range States {
		if s.Terminal() && len(transitions[s]) != 0 {
			t.Errorf("%s is terminal but has transitions", s)
		}
		if s.Certain() != (s == StateHeld || s == StateRenewing) {
			t.Errorf("%s.Certain() = %v", s, s.Certain())
		}
	}
}
