package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// ErrInvalid: a report or command that breaks the format or its bounds.
var ErrInvalid = errors.New("report: invalid")

// Decode parses a report strictly (no unknown fields, nothing after it,
// at most ReportBytesMax bytes) and checks it.
func Decode(body []byte) (*Report, error) {
	if len(body) > ReportBytesMax {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrInvalid, len(body), ReportBytesMax)
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	var r Report
	if err := d.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if d.More() {
		return nil, fmt.Errorf("%w: data after the report", ErrInvalid)
	}
	return &r, r.Check()
}

// Check enforces the format's bounds: counts, text lengths, resource
// names and outcome codes.
func (r *Report) Check() error {
	switch {
	case r.Schema != SchemaReport:
		return invalid("schema %q, want %s", r.Schema, SchemaReport)
	case len(r.Resources) > ResourcesPerReportMax:
		return invalid("%d resources, at most %d", len(r.Resources), ResourcesPerReportMax)
	case len(r.Decisions) > DecisionsPerReportMax:
		return invalid("%d decisions, at most %d", len(r.Decisions), DecisionsPerReportMax)
	case len(r.Unknown) > UnknownPerReportMax:
		return invalid("%d unknown operations, at most %d", len(r.Unknown), UnknownPerReportMax)
	case len(r.Results) > ResultsPerReportMax:
		return invalid("%d results, at most %d", len(r.Results), ResultsPerReportMax)
	case len(r.Counters) > len(gate.Outcomes)+1:
		return invalid("%d counters", len(r.Counters))
	case r.ResourcesTotal < len(r.Resources) || r.UnknownOpen < len(r.Unknown):
		return invalid("totals below the listed counts")
	}
	if err := texts("service", r.Service, "logId", r.LogID); err != nil {
		return err
	}
	for o := range r.Counters {
		if !knownOutcome(o) {
			return invalid("counter for unknown outcome %q", o)
		}
	}
	for i := range r.Resources {
		if err := r.Resources[i].check(); err != nil {
			return err
		}
	}
	if err := checkCoverage(r.Coverage); err != nil {
		return err
	}
	for _, d := range r.Decisions {
		if d.Resource != "" { // "": the envelope named no valid resource
			if err := resource(d.Resource); err != nil {
				return err
			}
		}
		if !knownOutcome(d.Outcome) {
			return invalid("decision outcome %q", d.Outcome)
		}
		if err := texts("caller", d.Caller, "reason", d.Reason); err != nil {
			return err
		}
	}
	for _, u := range r.Unknown {
		if err := resource(u.Resource); err != nil {
			return err
		}
		if err := texts("operationId", u.OperationID); err != nil {
			return err
		}
	}
	for _, res := range r.Results {
		if err := texts("result id", res.ID, "result outcome", res.Outcome, "result message", res.Message); err != nil {
			return err
		}
	}
	return nil
}

func (v *ResourceView) check() error {
	if err := resource(v.Resource); err != nil {
		return err
	}
	if _, err := gate.ParseMode(v.Mode); err != nil {
		return invalid("resource %s: %v", v.Resource, err)
	}
	if len(v.Recent) > RecordsPerResourceMax {
		return invalid("resource %s: %d records, at most %d", v.Resource, len(v.Recent), RecordsPerResourceMax)
	}
	if err := texts("pausedReason", v.PausedReason); err != nil {
		return err
	}
	for _, rec := range v.Recent {
		if err := texts("record kind", rec.Kind, "record detail", rec.Detail); err != nil {
			return err
		}
	}
	if a := v.LastAction; a != nil {
		return texts("action", a.Action, "operator", a.Operator, "action detail", a.Detail)
	}
	return nil
}

func knownOutcome(o string) bool {
	return o == OutcomeError || slices.Contains(gate.Outcomes, gate.Outcome(o))
}

func resource(r string) error {
	if err := grant.ValidateResource(r); err != nil {
		return invalid("resource %q: %v", r, err)
	}
	return nil
}

// texts checks name/value pairs: valid UTF-8, at most TextBytesMax bytes.
func texts(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if v := pairs[i+1]; len(v) > TextBytesMax || !utf8.ValidString(v) {
			return invalid("%s: not UTF-8 or over %d bytes", pairs[i], TextBytesMax)
		}
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// Cut shortens s to at most TextBytesMax bytes without splitting a rune.
func Cut(s string) string {
	if len(s) <= TextBytesMax {
		return s
	}
	s = s[:TextBytesMax-len("…")]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// checkCoverage bounds a report's coverage: the tables listed, their
// texts and modes, and counts that add up.
func checkCoverage(c *gate.Coverage) error {
	if c == nil {
		return nil
	}
	if len(c.Tables) > TablesPerReportMax {
		return invalid("%d protected tables, at most %d", len(c.Tables), TablesPerReportMax)
	}
	var ungated uint64
	for _, t := range c.Tables {
		if t.Mode != gate.ModeShadow && t.Mode != gate.ModeEnforce {
			return invalid("protected table %q: mode %q", t.Table, t.Mode)
		}
		if t.Table == "" {
			return invalid("a protected table without a name")
		}
		if err := texts("table", t.Table, "resource", t.Resource); err != nil {
			return err
		}
		ungated += t.Ungated
	}
	if ungated > c.Ungated {
		return invalid("the tables' ungated writes (%d) exceed the total (%d)", ungated, c.Ungated)
	}
	return nil
}
