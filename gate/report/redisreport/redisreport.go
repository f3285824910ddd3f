// Package redisreport is gate/report's Source and Resumer for
// gate/redisgate (a storereport.Source). Redis answers small reads in
// microseconds, so it reads afresh every report, but never everything:
//
//   - names with a few SCAN calls on the state keys
//     (redisgate.ResourceNames: at most ScanStepsMax calls of COUNT
//     ScanCount);
//   - each state it needs with one GET (redisgate.State);
//   - for each resource shown, three round trips of LLEN and LRANGE -n -1
//     on its alarm, quarantine and action lists (redisgate.LastRecords):
//     the counts and the last rows, never the rest of the lists.
package redisreport

import (
	"context"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
	"github.com/fencegate/fencegate/gate/redisgate"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/gate/report/storereport"
)

// New returns the Source and Resumer of g.
func New(g *redisgate.Gate) *storereport.Source { return storereport.New(store{g}) }

// store is storereport.Store on a redisgate.Gate.
type store struct{ g *redisgate.Gate }

func (s store) Names(ctx context.Context, cursor string, limit int) ([]string, string, error) {
	return s.g.ResourceNames(ctx, cursor, limit)
}

func (s store) State(ctx context.Context, resource string) (gate.FenceState, error) {
	return s.g.State(ctx, resource)
}

func (s store) Resume(ctx context.Context, resource string, floor uint64, operator, note string) error {
	return s.g.Resume(ctx, resource, floor, operator, note)
}

// Records implements storereport.Store.
func (s store) Records(ctx context.Context, resource string, _ gate.FenceState) (storereport.Records, error) {
	var out storereport.Records
	alarms, n, err := s.g.LastRecords(ctx, stored.RecordAlarm, resource, report.RecordsPerResourceMax)
	if err != nil {
		return out, err
	}
	out.Alarms = n
	quarantine, n, err := s.g.LastRecords(ctx, stored.RecordQuarantine, resource, report.RecordsPerResourceMax)
	if err != nil {
		return out, err
	}
	out.Quarantined, out.Recent = n, storereport.Recent(alarms, quarantine)
	acts, _, err := s.g.LastRecords(ctx, stored.RecordAction, resource, 1)
	if err != nil {
		return out, err
	}
	if len(acts) > 0 {
		out.LastAction = storereport.ActionView(acts[0])
	}
	return out, nil
}
