package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TracerName names the spans the server and client make.
const TracerName = "github.com/fencegate/fencegate/registry/httpapi"

// callRecord is what one call learned for its log line, span and audit
// line: who called (from the moment the identity is known, so a refusal
// names its caller too), about which resource, the fence it was granted,
// and, for an admin call, the values it asked for once they decoded.
type callRecord struct {
	caller, resource string
	// members, for a lock-set call, are its resources (resource then
	// holds them joined by spaces, for the request log).
	members []string
	fence   uint64
	admin   *adminValues // nil until an admin call's body decoded and checked
}

// adminValues are an admin call's checked values, for its audit line.
type adminValues struct {
	resource string
	value    uint64
	note     string
}

type recordKey struct{}

func withRecord(ctx context.Context, rec *callRecord) context.Context {
	return context.WithValue(ctx, recordKey{}, rec)
}

func recordOf(ctx context.Context) *callRecord {
	rec, _ := ctx.Value(recordKey{}).(*callRecord)
	return rec
}

// noteFence records the fence a call granted (acquire) or touched.
func noteFence(ctx context.Context, fence uint64) {
	if rec := recordOf(ctx); rec != nil {
		rec.fence = fence
	}
}

// noteCaller records the authenticated identity, as soon as it is known.
func noteCaller(ctx context.Context, caller string) {
	if rec := recordOf(ctx); rec != nil {
		rec.caller = caller
	}
}

// noteAdmin records an admin call's values once they are checked, so
// its audit line carries them (a refused note is never recorded).
func noteAdmin(ctx context.Context, resource string, value uint64, note string) {
	if rec := recordOf(ctx); rec != nil {
		rec.admin = &adminValues{resource: resource, value: value, note: note}
	}
}

// noteResource records the resource a call turned out to be about.
func noteResource(ctx context.Context, resource string) {
	if rec := recordOf(ctx); rec != nil {
		rec.resource = resource
	}
}

// noteMembers records a lock-set call's resources.
func noteMembers(ctx context.Context, members []string) {
	if rec := recordOf(ctx); rec != nil {
		rec.resource, rec.members = strings.Join(members, " "), members
	}
}

// seen are the resources a successful call names, for Config.Seen.
func (rec *callRecord) seen() []string {
	switch {
	case rec.members != nil:
		return rec.members
	case rec.resource != "":
		return []string{rec.resource}
	}
	return nil
}

// noteBody records the body's "resource" field, if any, unless the call
// noted a resource itself (the hot calls do, from the body they decoded,
// so that their body is parsed once).
func noteBody(ctx context.Context, body []byte) {
	rec := recordOf(ctx)
	if rec == nil || rec.resource != "" {
		return
	}
	var peek struct {
		Resource string `json:"resource"`
	}
	if len(body) > 0 && json.Unmarshal(body, &peek) == nil {
		rec.resource = peek.Resource
	}
}

// spanStart is how an endpoint's server span starts: its name and
// options, built once per route rather than per call.
type spanStart struct {
	name string
	opts []trace.SpanStartOption
}

func newSpanStart(e endpoint) spanStart {
	return spanStart{name: e.method + " " + e.path, opts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", e.method), attribute.String("http.route", e.path))}}
}

// startSpan continues the caller's trace (W3C traceparent) with a server
// span named after the route.
func (s *Server) startSpan(r *http.Request, st spanStart) (context.Context, trace.Span) {
	ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	return s.tracer.Start(ctx, st.name, st.opts...)
}

// observe ends one call: the latency histogram, the span's attributes and
// status, and (with Config.RequestLog) one log line.
func (s *Server) observe(ctx context.Context, r *http.Request, e endpoint, rec *callRecord, code string, took time.Duration, span trace.Span) {
	outcome := outcomeOf(code)
	s.cfg.Metrics.latencyOf(e.path, outcome, took)
	if span.IsRecording() { // without a tracer, build no attributes
		endSpan(span, rec, outcome, code)
	} else {
		span.End()
	}
	if !s.cfg.RequestLog {
		return
	}
	line := RequestLine{Method: r.Method, Path: r.URL.Path, Identity: rec.caller, Resource: rec.resource, Outcome: outcome, Took: took, Fence: rec.fence}
	if sc := span.SpanContext(); sc.HasTraceID() {
		line.TraceID = sc.TraceID().String()
	}
	LogRequest(ctx, s.cfg.Logger, line)
}

// endSpan sets a recorded call's attributes and status, and ends it.
func endSpan(span trace.Span, rec *callRecord, outcome, code string) {
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
}

// RequestLine is one call as the request log records it.
type RequestLine struct {
	Method, Path string
	// Identity is the authenticated caller, "" only when the call was
	// refused for want of one (UNAUTHENTICATED).
	Identity string
	Resource string // the body's resource field, "" when none
	Outcome  string // "ok" or the error's stable code
	Took     time.Duration
	Fence    uint64 // the fence granted, 0: none
	TraceID  string // "": not traced
}

// LogRequest writes l to logger at INFO as msg "request" with method,
// path, identity, resource, outcome, latency_ms and, when set, fence and
// trace_id. It is the one shape of a request line, for the API and for
// the endpoints the dashboard serves beside it.
func LogRequest(ctx context.Context, logger *slog.Logger, l RequestLine) {
	attrs := []slog.Attr{slog.String("method", l.Method), slog.String("path", l.Path), slog.String("identity", l.Identity),
		slog.String("resource", l.Resource), slog.String("outcome", l.Outcome), slog.Float64("latency_ms", float64(l.Took.Microseconds())/1000)}
	if l.Fence != 0 {
		attrs = append(attrs, slog.Uint64("fence", l.Fence))
	}
	if l.TraceID != "" {
		attrs = append(attrs, slog.String("trace_id", l.TraceID))
	}
	logger.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
}
