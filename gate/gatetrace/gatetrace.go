// Package gatetrace puts the gate's decision into the caller's trace:
// Run is sqlgate.Gate.Run inside a span carrying the resource, the fence,
// the segment, the caller and the outcome, so one trace shows a worker's
// acquire at the registry and the decision on its write at the resource.
// It keeps the gate core free of OpenTelemetry, as gatemetrics keeps it
// free of Prometheus.
package gatetrace

import (
	"context"
	"database/sql"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
)

// TracerName names the spans of this package.
const TracerName = "github.com/fencegate/fencegate/gate"

// SpanName is the decision span's name.
const SpanName = "fencegate.gate.decision"

// Attribute keys of the decision span.
const (
	AttrResource     = "fencegate.resource"
	AttrFence        = "fencegate.fence"
	AttrSegment      = "fencegate.segment"
	AttrOperation    = "fencegate.operation_id"
	AttrIdentity     = "fencegate.identity"
	AttrOutcome      = "fencegate.outcome"
	AttrHighestFence = "fencegate.highest_fence"
)

// Tracer wraps a gate with spans. The zero value uses otel's global
// provider.
type Tracer struct {
	Provider trace.TracerProvider
}

func (t Tracer) tracer() trace.Tracer {
	p := t.Provider
	if p == nil {
		p = otel.GetTracerProvider()
	}
	return p.Tracer(TracerName)
}

// Run calls g.Run(ctx, db, caller, m, fn) in a span. The outcome
// attribute is ACCEPTED, REPLAYED, or the rejection's code; a rejection
// also carries the highestFence it was decided against, and marks the span
// as an error.
func (t Tracer) Run(ctx context.Context, g *sqlgate.Gate, db *sql.DB, caller string, m *gate.Mutation, fn sqlgate.BusinessFunc) (gate.Receipt, error) {
	ctx, span := t.tracer().Start(ctx, SpanName, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String(AttrResource, m.Resource), attribute.Int64(AttrFence, int64(m.FenceToken)),
		attribute.Int64(AttrSegment, int64(m.SegmentSeq)), attribute.String(AttrOperation, m.OperationID),
		attribute.String(AttrIdentity, caller)))
	defer span.End()
	rcpt, err := g.Run(ctx, db, caller, m, fn)
	outcome := gate.OutcomeOf(err)
	if outcome == "" {
		outcome = "ERROR" // the database or the business function failed
	}
	span.SetAttributes(attribute.String(AttrOutcome, string(outcome)))
	var rej *gate.Rejection
	if errors.As(err, &rej) {
		span.SetAttributes(attribute.Int64(AttrHighestFence, int64(rej.HighestFence)))
	}
	if !gate.IsSuccess(err) {
		span.SetStatus(codes.Error, string(outcome))
	}
	return rcpt, err
}
