package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// AnswerBytesMax bounds the registry's answer read by a Reporter, 64 KiB.
const AnswerBytesMax = 64 << 10

// build assembles one report within the bounds, and says how many
// pending results it carries.
func (r *Reporter) build(ctx context.Context) (*Report, int, error) {
	rep := &Report{Schema: SchemaReport, Service: Cut(r.cfg.Service), ReportedAtMs: r.cfg.Clock.Now().UnixMilli(),
		IntervalMs: r.cfg.IntervalMs, Decisions: []Decision{}, Unknown: []UnknownOp{}, Results: []Result{}}
	var recent []string
	if l := r.cfg.Log; l != nil {
		rep.LogID = l.ID()
		for _, d := range l.Last(DecisionsPerReportMax) {
			d.Reason, d.Caller = Cut(d.Reason), Cut(d.Caller)
			if grant.ValidateResource(d.Resource) != nil {
				d.Resource = "" // a MALFORMED envelope's: not a name to show or look up
			}
			rep.Decisions = append(rep.Decisions, d)
		}
		for i := len(rep.Decisions) - 1; i >= 0; i-- {
			if res := rep.Decisions[i].Resource; res != "" && !slices.Contains(recent, res) {
				recent = append(recent, res)
			}
		}
	}
	views, total, err := r.cfg.Source.Resources(ctx, recent, ResourcesPerReportMax)
	if err != nil {
		return nil, 0, fmt.Errorf("report: read the gate's state: %w", err)
	}
	rep.Resources, rep.ResourcesTotal = views[:min(len(views), ResourcesPerReportMax)], max(total, len(views))
	if cs, ok := r.cfg.Source.(CoverageSource); ok {
		c, err := cs.Coverage(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("report: read the gate's coverage: %w", err)
		}
		rep.Coverage = coverageView(c)
	}
	if u := r.cfg.Unknown; u != nil {
		n, _ := u.Open()
		rep.UnknownOpen = n
		for _, op := range u.Oldest(UnknownPerReportMax) {
			rep.Unknown = append(rep.Unknown, UnknownOp{Resource: op.Resource, OperationID: Cut(op.OperationID), SinceMs: op.Since.UnixMilli()})
		}
		rep.UnknownOpen = max(rep.UnknownOpen, len(rep.Unknown))
	}
	if c := r.cfg.Counters; c != nil {
		rep.Counters = map[string]uint64{}
		for _, n := range c.Snapshot() {
			if n.N > 0 {
				rep.Counters[string(n.Outcome)] = n.N
			}
		}
	}
	r.mu.Lock()
	rep.Results = append(rep.Results, r.pending[:min(len(r.pending), ResultsPerReportMax)]...)
	r.mu.Unlock()
	return rep, len(rep.Results), nil
}

// encode marshals rep, dropping the oldest decisions and then the last
// resources (paused ones come first and go last) until it fits.
func encode(rep *Report) ([]byte, error) {
	for {
		b, err := json.Marshal(rep)
		if err != nil || len(b) <= ReportBytesMax {
			return b, err
		}
		switch {
		case len(rep.Decisions) > 0:
			rep.Decisions = rep.Decisions[len(rep.Decisions)/2+len(rep.Decisions)%2:]
		case len(rep.Resources) > 1:
			rep.Resources = rep.Resources[:len(rep.Resources)/2]
		default:
			return nil, fmt.Errorf("report: %d bytes with one resource and no decisions, over %d", len(b), ReportBytesMax)
		}
	}
}

// post sends rep and reads the answer.
func (r *Reporter) post(ctx context.Context, rep *Report) (*Answer, error) {
	body, err := encode(rep)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if r.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.cfg.Token)
	}
	resp, err := r.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, AnswerBytesMax+1))
	if err != nil {
		return nil, fmt.Errorf("report: read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("report: registry answered %s: %s", resp.Status, bytes.TrimSpace(raw[:min(len(raw), 512)]))
	}
	if len(raw) > AnswerBytesMax {
		return nil, fmt.Errorf("report: answer over %d bytes", AnswerBytesMax)
	}
	var ans Answer
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("report: answer: %w", err)
	}
	return &ans, nil
}

// coverageView is c bounded for a report: at most TablesPerReportMax
// tables (the counts still cover them all), texts cut.
func coverageView(c gate.Coverage) *gate.Coverage {
	c.Tables = slices.Clone(c.Tables[:min(len(c.Tables), TablesPerReportMax)])
	if c.Tables == nil {
		c.Tables = []gate.ProtectedTable{}
	}
	for i := range c.Tables {
		c.Tables[i].Table, c.Tables[i].Resource = Cut(c.Tables[i].Table), Cut(c.Tables[i].Resource)
	}
	return &c
}
