package gateadmin

import (
	"context"
	"fmt"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
	"github.com/fencegate/fencegate/grant"
)

// RecordingGate is a gate that keeps its state and its records (alarms,
// quarantines, operator actions) in its own store rather than in a SQL
// database: *objgate.Gate and *redisgate.Gate.
type RecordingGate interface {
	// State reads the resource's stored state.
	State(ctx context.Context, resource string) (gate.FenceState, error)
	// Records lists the resource's records of one kind ("alarm",
	// "action", …), oldest first.
	Records(ctx context.Context, kind, resource string) ([]stored.Record, error)
	// Resume applies adapt.ResumeAction and records it with operator and
	// note.
	Resume(ctx context.Context, resource string, registryFloor uint64, operator, note string) error
}

// CoverageGate is a RecordingGate that guards protected tables (the gate
// inside PostgreSQL): Store's Status then carries its coverage.
type CoverageGate interface {
	RecordingGate
	// Coverage reads the gate's coverage counts and protected tables.
	Coverage(ctx context.Context) (gate.Coverage, error)
	// GatedWrites counts the protected rows written under accepts of
	// resource.
	GatedWrites(ctx context.Context, resource string) (uint64, error)
}

// Store is Admin on a RecordingGate. Operator is recorded with every
// action; the store's own access control is the authentication (mount
// Handler with HandlerConfig.Store to offer it over HTTP instead).
type Store struct {
	Gate     RecordingGate
	Operator string
}

var _ Admin = (*Store)(nil)

// Status implements Admin. The state and the records are separate
// reads, so a decision in between can show in one and not the other.
func (s *Store) Status(ctx context.Context, resource string) (Status, error) {
	if err := grant.ValidateResource(resource); err != nil {
		return Status{}, errorf("resource %q: %v", resource, err)
	}
	st, err := s.Gate.State(ctx, resource)
	if err != nil {
		return Status{}, fmt.Errorf("gateadmin: %w", err)
	}
	out := statusFrom(resource, st)
	alarms, err := s.Gate.Records(ctx, stored.RecordAlarm, resource)
	if err != nil {
		return Status{}, fmt.Errorf("gateadmin: %w", err)
	}
	for _, a := range alarms[max(0, len(alarms)-RecordsMax):] {
		out.Alarms = append(out.Alarms, Alarm{Fence: a.FenceToken, Kind: a.AlarmKind, Detail: a.Detail, AtMs: a.AtMs})
	}
	acts, err := s.Gate.Records(ctx, stored.RecordAction, resource)
	if err != nil {
		return Status{}, fmt.Errorf("gateadmin: %w", err)
	}
	for _, a := range acts[max(0, len(acts)-RecordsMax):] {
		out.Actions = append(out.Actions, Action{Action: a.Outcome, Operator: a.Operator, Detail: a.Detail, AtMs: a.AtMs})
	}
	if cg, ok := s.Gate.(CoverageGate); ok {
		c, err := cg.Coverage(ctx)
		if err != nil {
			return Status{}, fmt.Errorf("gateadmin: %w", err)
		}
		n, err := cg.GatedWrites(ctx, resource)
		if err != nil {
			return Status{}, fmt.Errorf("gateadmin: %w", err)
		}
		out.Coverage = &Coverage{Coverage: c, ResourceGated: n}
	}
	return out, nil
}

// Resume implements Admin.
func (s *Store) Resume(ctx context.Context, req ResumeRequest) (Status, error) {
	return resume(ctx, s, req, s.Operator, func() error {
		return s.Gate.Resume(ctx, req.Resource, req.Floor, s.Operator, req.Note)
	})
}
