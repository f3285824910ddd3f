package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TracerName names the spans the server and client make.
const TracerName = "github.com/fencegate/fencegate/registry/httpapi"

// callRecord is what one call learned for its log line and span: who
// called, about which resource, and the fence it was granted.
type callRecord struct {
	caller, resource string
	fence            uint64
}

type recordKey struct{}

func withRecord(ctx context.Context, rec *callRecord) context.Context {
	return context.WithValue(ctx, recordKey{}, rec)
}

// noteFence records the fence a call granted (acquire) or touched.
func noteFence(ctx context.Context, fence uint64) {
	if rec, ok := ctx.Value(recordKey{}).(*callRecord); ok {
		rec.fence = fence
	}
}

// noteRequest records the caller and the body's "resource" field, if any.
func noteRequest(ctx context.Context, caller string, body []byte) {
	rec, ok := ctx.Value(recordKey{}).(*callRecord)
	if !ok {
		return
	}
	rec.caller = caller
	var peek struct {
		Resource string `json:"resource"`
	}
	if len(body) > 0 && json.Unmarshal(body, &peek) == nil {
		rec.resource = peek.Resource
	}
}

// startSpan continues the caller's trace (W3C traceparent) with a server
// span named after the route.
func (s *Server) startSpan(r *http.Request, e endpoint) (context.Context, trace.Span) {
	ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	return s.tracer.Start(ctx, e.method+" "+e.path, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", e.method), attribute.String("http.route", e.path)))
}

// observe ends one call: the latency histogram, the span's attributes and
// status, and (with Config.RequestLog) one log line.
func (s *Server) observe(ctx context.Context, r *http.Request, e endpoint, rec *callRecord, code string, took time.Duration, span trace.Span) {
	outcome := outcomeOf(code)
	s.cfg.Metrics.latencyOf(e.path, outcome, took)
	span.SetAttributes(attribute.String("fencegate.outcome", outcome), attribute.String("fencegate.identity", rec.caller))
	if rec.resource != "" {
		span.SetAttributes(attribute.String("fencegate.resource", rec.resource))
	}
	if rec.fence != 0 {
		span.SetAttributes(attribute.Int64("fencegate.fence", int64(rec.fence)))
	}
	if code != "" {
		span.SetStatus(codes.Error, code)
	}
	span.End()
	if !s.cfg.RequestLog {
		return
	}
	attrs := []slog.Attr{slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("identity", rec.caller),
		slog.String("resource", rec.resource), slog.String("outcome", outcome), slog.Float64("latency_ms", float64(took.Microseconds())/1000)}
	if rec.fence != 0 {
		attrs = append(attrs, slog.Uint64("fence", rec.fence))
	}
	if sc := span.SpanContext(); sc.HasTraceID() {
		attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
	}
	s.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
}

// injectTrace puts ctx's trace into an outgoing request (a no-op unless a
// propagator is installed, as serve and the tests do).
func injectTrace(ctx context.Context, h http.Header) {
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(h))
}
