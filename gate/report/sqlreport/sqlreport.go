// Package sqlreport is gate/report's Source and Resumer for gate/sqlgate:
// it reads a report's resources in one read-only transaction of a few
// set-based queries (sqlgate's overview reads), and resumes through
// sqlgate.Gate.Resume, which records the operator and note in the gate's
// operator_actions in the resuming transaction.
package sqlreport

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/gate/sqlgate"
)

// Gate is a sqlgate gate seen by a Reporter.
type Gate struct {
	Gate *sqlgate.Gate // required
	// Read is where reports read: on SQLite a second handle from
	// sqlgate.OpenSQLiteReader (so reads never queue for the writers'
	// one connection), on PostgreSQL the service's pool. Required.
	Read *sql.DB
	// Write is the database resumes are applied on (the service's own
	// handle). Required for Resume.
	Write *sql.DB
}

var (
	_ report.CoverageSource = (*Gate)(nil)
	_ report.Resumer        = (*Gate)(nil)
)

// Coverage implements report.CoverageSource.
func (g *Gate) Coverage(ctx context.Context) (gate.Coverage, error) {
	if g.Gate == nil || g.Read == nil {
		return gate.Coverage{}, errors.New("sqlreport: Gate and Read are required")
	}
	return g.Gate.Coverage(ctx, g.Read)
}

// recentRowsMax is how many of the last alarm, quarantine and action rows
// one report reads to pick each resource's last ones.
const recentRowsMax = 4 * report.ResourcesPerReportMax

// Resources implements report.Source.
func (g *Gate) Resources(ctx context.Context, recent []string, limit int) ([]report.ResourceView, int, error) {
	if g.Gate == nil || g.Read == nil {
		return nil, 0, errors.New("sqlreport: Gate and Read are required")
	}
	tx, err := g.Read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, fmt.Errorf("sqlreport: %w", err)
	}
	defer tx.Rollback()
	names, total, err := g.Gate.ResourceNames(ctx, tx, limit)
	if err != nil {
		return nil, 0, err
	}
	for _, r := range recent {
		if !slices.Contains(names, r) {
			names = append(names, r)
		}
	}
	views := make([]report.ResourceView, 0, len(names))
	for _, name := range names {
		st, err := g.Gate.State(ctx, tx, name)
		if err != nil {
			return nil, 0, err
		}
		views = append(views, report.ViewOf(name, st))
	}
	views = report.Order(views, recent, limit)
	byName := make(map[string]int, len(views))
	for i, v := range views {
		byName[v.Resource] = i
	}
	if err := g.records(ctx, tx, views, byName); err != nil {
		return nil, 0, err
	}
	return views, total, g.actions(ctx, tx, views, byName)
}

// records fills the alarm and quarantine counts and each resource's last
// rows.
func (g *Gate) records(ctx context.Context, tx *sql.Tx, views []report.ResourceView, byName map[string]int) error {
	var all []sqlgate.Record
	for _, kind := range []string{"alarms", "quarantine"} {
		counts, last, err := g.Gate.RecordSummary(ctx, tx, kind, recentRowsMax)
		if err != nil {
			return err
		}
		for name, n := range counts {
			if i, ok := byName[name]; ok {
				if kind == "alarms" {
					views[i].Alarms = n
				} else {
					views[i].Quarantined = n
				}
			}
		}
		all = append(all, last...)
	}
	slices.SortStableFunc(all, func(a, b sqlgate.Record) int { return cmp.Compare(a.AtMs, b.AtMs) })
	for _, rec := range all {
		if i, ok := byName[rec.Resource]; ok {
			v := &views[i]
			v.Recent = append(v.Recent, report.RecordView{Kind: report.Cut(rec.Kind), Fence: rec.FenceToken, Detail: report.Cut(rec.Detail), AtMs: rec.AtMs})
			if len(v.Recent) > report.RecordsPerResourceMax {
				v.Recent = v.Recent[1:]
			}
		}
	}
	return nil
}

// actions fills each resource's last recorded operator action.
func (g *Gate) actions(ctx context.Context, tx *sql.Tx, views []report.ResourceView, byName map[string]int) error {
	acts, err := g.Gate.LastActions(ctx, tx, recentRowsMax)
	if err != nil {
		return err
	}
	for _, a := range acts { // oldest first: the last one wins
		if i, ok := byName[a.Subject]; ok {
			views[i].LastAction = &report.ActionView{Action: report.Cut(a.Action), Operator: report.Cut(a.Operator), Detail: report.Cut(a.Detail), AtMs: a.AtMs}
		}
	}
	return nil
}

// Resume implements report.Resumer with the gate's recorded resume.
func (g *Gate) Resume(ctx context.Context, resource string, floor uint64, operator, note string) error {
	if g.Gate == nil || g.Write == nil {
		return errors.New("sqlreport: Gate and Write are required to resume")
	}
	return g.Gate.Resume(ctx, g.Write, resource, floor, operator, note)
}
