// Package gateadmin lets an operator see and recover a gate's resources
// without writing Go: the status of a resource (fence state, pause,
// alarms, operator actions) and Resume after a FENCE_REGRESSION.
//
// Two ways in, one contract (Admin):
//
//   - Local works on the gate's database directly (a SQLite file or a
//     PostgreSQL DSN, OpenDSN). Whoever can open the database is trusted;
//     the operator names themself.
//   - Handler is an HTTP endpoint a service embedding the gate mounts with
//     one call, mux.Handle(gateadmin.PathPrefix, gateadmin.Handler(cfg)).
//     Callers authenticate as the service's other callers do (mTLS or a
//     bearer token) and must be named admins; the recorded operator is the
//     authenticated identity, never a field. Client is its Go client.
//
// `fencegate gate status|resume` uses Local with --db and Client with
// --gate. Every resume is recorded in the gate's operator_actions, with
// the operator and the note, in the same transaction as the resume.
package gateadmin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
)

// Admin is what an operator can do at a gate.
type Admin interface {
	// Status returns the resource's state at the gate, with its alarms
	// and operator actions. A resource the gate has never seen has
	// highestFence 0 and the gate's default mode.
	Status(ctx context.Context, resource string) (Status, error)
	// Resume lifts a FENCE_REGRESSION pause (sqlgate.Gate.Resume): the
	// request states the registry's fence floor for the resource, which
	// must be above highestFence, else an error wrapping
	// gate.ErrResumeRefused. It returns the status after the resume.
	Resume(ctx context.Context, req ResumeRequest) (Status, error)
}

// ResumeRequest is POST PathPrefix+"resume".
type ResumeRequest struct {
	Resource string `json:"resource"`
	// Floor is the registry's fence floor for the resource, as `fencegate
	// floor raise` reported it: every later grant's fence is above it.
	Floor uint64 `json:"floor"`
	// Note says why; required, at most NoteBytesMax bytes.
	Note string `json:"note"`
}

// NoteBytesMax bounds a resume's note, 1 KiB.
const NoteBytesMax = 1024

// ErrInvalid: a request that can never succeed as written (bad resource
// name, missing or oversized note, zero floor).
var ErrInvalid = errors.New("gateadmin: invalid request")

// Status is an operator's view of one resource at a gate.
type Status struct {
	Resource            string   `json:"resource"`
	Mode                string   `json:"mode"`
	HighestFence        uint64   `json:"highestFence"`
	LastSegmentSeq      uint64   `json:"lastSegmentSeq"`
	Root                string   `json:"root"`        // operation root at highestFence, or ""
	GrantDigest         string   `json:"grantDigest"` // grant last accepted at highestFence, or ""
	GrantIssuedAt       string   `json:"grantIssuedAt"`
	MinPolicyGeneration uint64   `json:"minPolicyGeneration"`
	Paused              bool     `json:"paused"`
	PausedReason        string   `json:"pausedReason"`
	Floor               uint64   `json:"floor"` // the floor stated at the last resume (0: never resumed)
	FloorAt             string   `json:"floorAt"`
	Alarms              []Alarm  `json:"alarms"`
	Actions             []Action `json:"actions"`
	// Coverage is the gate's count of protected-table writes, with this
	// resource's own gated rows; absent where the gate guards no tables
	// (objgate, redisgate).
	Coverage *Coverage `json:"coverage,omitempty"`
}

// Coverage is a Status's coverage: the gate's (gate.Coverage: gated and
// ungated rows of its protected tables, and the tables) and the rows
// written under accepts of the resource.
type Coverage struct {
	gate.Coverage
	ResourceGated uint64 `json:"resourceGated"`
}

// Alarm is one alarm row (FENCE_REGRESSION, REGRESSION_SUSPECTED).
type Alarm struct {
	Fence  uint64 `json:"fence"`
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
	AtMs   int64  `json:"atMs"`
}

// Action is one recorded operator action on the resource.
type Action struct {
	Action   string `json:"action"`
	Operator string `json:"operator"`
	Detail   string `json:"detail"`
	AtMs     int64  `json:"atMs"`
}

// RecordsMax bounds the alarms and actions a Status carries (the last
// ones), 50 each.
const RecordsMax = 50

// statusOf assembles a Status from the gate's tables.
func statusOf(ctx context.Context, g *sqlgate.Gate, q sqlgate.DBTX, resource string) (Status, error) {
	st, err := g.State(ctx, q, resource)
	if err != nil {
		return Status{}, err
	}
	out := statusFrom(resource, st)
	alarms, err := g.Records(ctx, q, "alarms", resource)
	if err != nil {
		return Status{}, err
	}
	for _, a := range alarms[max(0, len(alarms)-RecordsMax):] {
		out.Alarms = append(out.Alarms, Alarm{Fence: a.FenceToken, Kind: a.Kind, Detail: a.Detail, AtMs: a.AtMs})
	}
	acts, err := g.OperatorActions(ctx, q, resource, RecordsMax)
	if err != nil {
		return Status{}, err
	}
	for _, a := range acts {
		out.Actions = append(out.Actions, Action{Action: a.Action, Operator: a.Operator, Detail: a.Detail, AtMs: a.AtMs})
	}
	c, err := g.Coverage(ctx, q)
	if err != nil {
		return Status{}, err
	}
	n, err := g.GatedWrites(ctx, q, resource)
	if err != nil {
		return Status{}, err
	}
	out.Coverage = &Coverage{Coverage: c, ResourceGated: n}
	return out, nil
}

// statusFrom is the Status of a resource in state st, without records.
func statusFrom(resource string, st gate.FenceState) Status {
	out := Status{
		Resource: resource, Mode: string(st.Mode), HighestFence: st.HighestFence, LastSegmentSeq: st.LastSegmentSeq,
		MinPolicyGeneration: st.MinPolicyGeneration, Paused: st.Paused, PausedReason: st.PausedReason,
		Floor: st.Floor, FloorAt: instant(st.FloorAt), GrantIssuedAt: instant(st.GrantIssuedAt),
		Alarms: []Alarm{}, Actions: []Action{},
	}
	if !st.Root.IsZero() {
		out.Root = st.Root.String()
	}
	if !st.GrantDigest.IsZero() {
		out.GrantDigest = st.GrantDigest.String()
	}
	return out
}

func instant(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// resume is every Admin's Resume: the request and the operator checked
// before anything is touched, the gate's recorded resume (apply), then
// the status after it.
func resume(ctx context.Context, a Admin, req ResumeRequest, operator string, apply func() error) (Status, error) {
	if err := checkResume(req); err != nil {
		return Status{}, err
	}
	if operator == "" {
		return Status{}, errorf("operator is required: name who resumes (recorded with the action)")
	}
	if err := apply(); err != nil {
		return Status{}, err
	}
	return a.Status(ctx, req.Resource)
}

// checkResume validates a resume request before anything is locked.
func checkResume(req ResumeRequest) error {
	if err := grant.ValidateResource(req.Resource); err != nil {
		return errorf("resource %q: %v", req.Resource, err)
	}
	switch {
	case req.Note == "":
		return errorf("note is required: say why the resource may resume (an incident, a ticket)")
	case len(req.Note) > NoteBytesMax:
		return errorf("note: %d bytes, at most %d", len(req.Note), NoteBytesMax)
	case req.Floor == 0:
		return errorf("floor is required: the registry's fence floor for the resource (fencegate floor raise)")
	}
	return nil
}

func errorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
