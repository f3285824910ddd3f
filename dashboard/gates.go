package dashboard

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencegate/fencegate/gate/report"
)

// Bounds of what the dashboard keeps about gates.
const (
	// GatesMax is how many gates are kept; a new one beyond it replaces
	// the one that reported least recently.
	GatesMax = 64
	// DecisionsKeptMax is how many decisions are kept per gate.
	DecisionsKeptMax = 64
	// GateForgetMs is how long a gate is kept after its last report,
	// 10 min.
	GateForgetMs = 10 * 60 * 1000
	// GateStaleIntervals: a gate that missed this many of its own
	// intervals (plus a second) is shown as stale.
	GateStaleIntervals = 3
	// staleIntervalMsMax caps the interval a gate claims, 60 s (a
	// reporter never waits longer).
	staleIntervalMsMax = 60_000
)

// errRateLimited: a gate reported again within report.ReportSpacingMsMin.
var errRateLimited = errors.New("dashboard: report rate limited")

// gateRecord is what the dashboard knows of one gate.
type gateRecord struct {
	id         string
	rep        *report.Report
	receivedAt time.Time // registry clock
	logID      string
	lastSeq    uint64
	decisions  []report.Decision // oldest first
}

// gateStore keeps the gates' last reports. Safe for concurrent use.
type gateStore struct {
	mu    sync.Mutex
	gates map[string]*gateRecord
}

func newGateStore() *gateStore { return &gateStore{gates: map[string]*gateRecord{}} }

// accept stores rep from gate id at now, or refuses it as too soon.
func (s *gateStore) accept(id string, rep *report.Report, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget(now)
	g := s.gates[id]
	if g != nil {
		if gap := now.Sub(g.receivedAt); gap < report.ReportSpacingMsMin*time.Millisecond {
			return fmt.Errorf("%w: %s reported %s ago, at most one per %d ms", errRateLimited, id, gap.Round(time.Millisecond), report.ReportSpacingMsMin)
		}
	} else {
		if len(s.gates) >= GatesMax {
			s.evictOldest()
		}
		g = &gateRecord{id: id}
		s.gates[id] = g
	}
	if rep.LogID != g.logID { // a new decision log: the gate restarted
		g.logID, g.lastSeq, g.decisions = rep.LogID, 0, nil
	}
	for _, dec := range rep.Decisions {
		if dec.Seq > g.lastSeq {
			g.decisions = append(g.decisions, dec)
			g.lastSeq = dec.Seq
		}
	}
	g.decisions = g.decisions[max(0, len(g.decisions)-DecisionsKeptMax):]
	g.rep, g.receivedAt = rep, now
	return nil
}

// forget drops gates silent for GateForgetMs.
func (s *gateStore) forget(now time.Time) {
	for id, g := range s.gates {
		if now.Sub(g.receivedAt) > GateForgetMs*time.Millisecond {
			delete(s.gates, id)
		}
	}
}

func (s *gateStore) evictOldest() {
	var oldest *gateRecord
	for _, g := range s.gates {
		if oldest == nil || g.receivedAt.Before(oldest.receivedAt) {
			oldest = g
		}
	}
	if oldest != nil {
		delete(s.gates, oldest.id)
	}
}

// known reports whether gate id has reported and is not forgotten.
func (s *gateStore) known(id string, now time.Time) (*report.Report, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget(now)
	g, ok := s.gates[id]
	if !ok {
		return nil, false
	}
	return g.rep, true
}

// GateView is one gate as the page shows it.
type GateView struct {
	ID        string
	Report    *report.Report // the last report (not to be modified)
	AgeMs     int64          // since it arrived, registry clock
	Stale     bool
	Decisions []report.Decision // oldest first
}

// snapshot returns every gate, by identity.
func (s *gateStore) snapshot(now time.Time) []GateView {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget(now)
	out := make([]GateView, 0, len(s.gates))
	for _, g := range s.gates {
		age := now.Sub(g.receivedAt)
		interval := time.Duration(min(max(g.rep.IntervalMs, report.IntervalMsMin), staleIntervalMsMax)) * time.Millisecond
		out = append(out, GateView{ID: g.id, Report: g.rep, AgeMs: age.Milliseconds(),
			Stale: age > GateStaleIntervals*interval+time.Second, Decisions: slices.Clone(g.decisions)})
	}
	slices.SortFunc(out, func(a, b GateView) int { return strings.Compare(a.ID, b.ID) })
	return out
}
