// Package telemetry sets up a fencegate process's logs and traces: a
// log/slog logger in text or JSON, and OpenTelemetry tracing with W3C
// trace-context propagation, exporting over OTLP/HTTP only when an
// endpoint is configured (off by default: no exporter, no goroutine, no
// network).
package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ShutdownTimeout bounds flushing spans at exit, 5s.
const ShutdownTimeout = 5 * time.Second

// NewLogger returns a slog logger writing to w in format ("text" or
// "json") at level ("debug", "info", "warn", "error").
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("telemetry: log level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("telemetry: log format %q: want text or json", format)
}

// TraceConfig configures tracing.
type TraceConfig struct {
	// OTLPEndpoint is the collector's OTLP/HTTP base URL, e.g.
	// "http://otel-collector:4318" (spans go to its /v1/traces). Empty: no
	// export (the default).
	OTLPEndpoint string
	// ServiceName and Version label every span's resource.
	ServiceName, Version string
}

// CheckEndpoint validates an OTLP endpoint without connecting.
func CheckEndpoint(endpoint string) error {
	if endpoint == "" {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("telemetry: OTLP endpoint %q: want http(s)://host:port", endpoint)
	}
	return nil
}

// SetupTracing installs the W3C trace-context propagator and, with an
// endpoint, a batching OTLP/HTTP exporter as the global tracer provider.
// It returns the provider (a no-op one without an endpoint) and a
// shutdown that flushes what is buffered.
func SetupTracing(ctx context.Context, cfg TraceConfig) (trace.TracerProvider, func(context.Context) error, error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if cfg.OTLPEndpoint == "" {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	if err := CheckEndpoint(cfg.OTLPEndpoint); err != nil {
		return nil, nil, err
	}
	u, _ := url.Parse(cfg.OTLPEndpoint)
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(u.Host),
		otlptracehttp.WithURLPath(strings.TrimRight(u.Path, "/") + "/v1/traces")}
	if u.Scheme == "http" {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	res := resource.NewWithAttributes("", attribute.String("service.name", cfg.ServiceName), attribute.String("service.version", cfg.Version))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp, tp.Shutdown, nil
}

// InjectHeaders puts ctx's trace into an outgoing request's headers (a
// no-op until SetupTracing installed the propagator): the registry
// client's httpclient.WithHeaders.
func InjectHeaders(ctx context.Context, h http.Header) {
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(h))
}
