package dashboard

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/fencegate/fencegate/gate/report"
)

// Bounds of the action log.
const (
	// ActionsKeptMax is how many actions the page lists, the last 50.
	ActionsKeptMax = 50
	// CommandsPendingMax is how many undelivered or unanswered commands a
	// gate may have at once; more are refused until some are answered or
	// expire.
	CommandsPendingMax = 8
)

// Action states. Registry actions end "done" or "error"; a resume goes
// queued → delivered → one of report's Result outcomes, or "expired".
const (
	StateDone      = "done"
	StateError     = "error"
	StateQueued    = "queued"
	StateDelivered = "delivered"
	StateExpired   = "expired"
)

// Action is one operator action taken on the page.
type Action struct {
	ID       string
	AtMs     int64 // registry clock
	Operator string
	Kind     string // raise-floor, revoke-epochs, gate-resume, break
	Gate     string // gate-resume only
	Resource string
	Lease    string // break only: the lease confirmed
	Value    uint64 // the fence, epoch or floor asked for
	Note     string
	State    string
	Message  string

	command   *report.SignedCommand // gate-resume only
	expiresAt time.Time
}

// Pending reports whether the action still waits for a gate.
func (a *Action) Pending() bool { return a.State == StateQueued || a.State == StateDelivered }

// actionLog is the page's list of actions and the gates' command queues.
// Safe for concurrent use.
type actionLog struct {
	mu    sync.Mutex
	items []*Action // oldest first
}

var errTooManyPending = errors.New("dashboard: too many commands pending for this gate")

// add records a; a resume is refused while its gate has
// CommandsPendingMax pending.
func (l *actionLog) add(a *Action, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(now)
	if a.command != nil {
		n := 0
		for _, b := range l.items {
			if b.Gate == a.Gate && b.Pending() {
				n++
			}
		}
		if n >= CommandsPendingMax {
			return errTooManyPending
		}
	}
	l.items = append(l.items, a)
	// Keep the last ActionsKeptMax, but never drop a pending command.
	for len(l.items) > ActionsKeptMax {
		i := slices.IndexFunc(l.items, func(b *Action) bool { return !b.Pending() })
		if i < 0 {
			break
		}
		l.items = slices.Delete(l.items, i, i+1)
	}
	return nil
}

func (l *actionLog) expire(now time.Time) {
	for _, a := range l.items {
		if a.Pending() && now.After(a.expiresAt) {
			a.State, a.Message = StateExpired, "no answer from the gate before the command expired"
		}
	}
}

// deliver returns the commands pending for gate (at most
// report.CommandsPerAnswerMax, oldest first) and marks them delivered.
// An answered command is never sent again; an unanswered one is sent
// with every answer until it expires (the gate answers a repeat with the
// same result).
func (l *actionLog) deliver(gate string, now time.Time) []report.SignedCommand {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(now)
	out := []report.SignedCommand{}
	for _, a := range l.items {
		if a.Gate == gate && a.Pending() && len(out) < report.CommandsPerAnswerMax {
			out = append(out, *a.command)
			a.State = StateDelivered
		}
	}
	return out
}

// results applies a gate's results to its own commands (never another
// gate's) and returns the actions they settled.
func (l *actionLog) results(gate string, rs []report.Result, now time.Time) []Action {
	l.mu.Lock()
	defer l.mu.Unlock()
	var settled []Action
	for _, res := range rs {
		for _, a := range l.items {
			if a.Gate == gate && a.ID == res.ID && a.Pending() && isResult(res.Outcome) {
				a.State, a.Message = res.Outcome, res.Message
				settled = append(settled, *a)
			}
		}
	}
	return settled
}

func isResult(o string) bool {
	return slices.Contains([]string{report.ResultApplied, report.ResultRefused, report.ResultRejected, report.ResultDisabled, report.ResultFailed}, o)
}

// list returns copies of the actions, newest first.
func (l *actionLog) list(now time.Time) []Action {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(now)
	out := make([]Action, 0, len(l.items))
	for i := len(l.items) - 1; i >= 0; i-- {
		out = append(out, *l.items[i])
	}
	return out
}

// newID returns a random action ID.
func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
