package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/wire"
)

// Codes of the report endpoint's errors (wire.ErrorBody), beside the
// API's UNAUTHENTICATED, FORBIDDEN, BAD_REQUEST, TOO_LARGE,
// UNSUPPORTED_MEDIA_TYPE and METHOD_NOT_ALLOWED.
const (
	CodeRateLimited = "RATE_LIMITED" // 429: within report.ReportSpacingMsMin of the last report
	CodeInvalid     = "INVALID"      // 400: a report outside the format or its bounds
)

// ingest is POST report.ReportPath: one gate's report, answered with the
// commands queued for it, and (Config.RequestLog) one request line naming
// the gate's identity, as the API's calls have.
func (d *Dashboard) ingest(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	line := httpapi.RequestLine{Method: r.Method, Path: r.URL.Path}
	line.Outcome = d.takeReport(w, r, &line)
	line.Took = time.Since(start)
	if d.cfg.RequestLog {
		httpapi.LogRequest(r.Context(), d.cfg.Logger, line)
	}
}

// takeReport serves one report and returns its outcome ("ok" or the code).
// Checks, in order: method, identity, media type (before the body is
// read), gate reporter, size, format, rate; what the gate may not see is
// dropped from the report before it is kept.
func (d *Dashboard) takeReport(w http.ResponseWriter, r *http.Request, line *httpapi.RequestLine) string {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return apiError(w, http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed, "dashboard: "+report.ReportPath+" wants POST")
	}
	id, err := d.cfg.Auth.Authenticate(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="fencegate"`)
		return apiError(w, http.StatusUnauthorized, wire.CodeUnauthenticated, err.Error())
	}
	line.Identity = id
	if err := httpapi.CheckJSONContentType(r); err != nil {
		return apiError(w, http.StatusUnsupportedMediaType, wire.CodeUnsupportedMediaType, err.Error())
	}
	if !slices.Contains(d.cfg.GateReporters, id) {
		return apiError(w, http.StatusForbidden, wire.CodeForbidden, fmt.Sprintf("dashboard: %s is not a gate reporter (serve --gate-reporter)", id))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, report.ReportBytesMax+1))
	if err != nil {
		return apiError(w, http.StatusBadRequest, wire.CodeBadRequest, "dashboard: read report: "+err.Error())
	}
	if len(body) > report.ReportBytesMax {
		return apiError(w, http.StatusRequestEntityTooLarge, wire.CodeTooLarge, fmt.Sprintf("dashboard: report over %d bytes", report.ReportBytesMax))
	}
	rep, err := report.Decode(body)
	if err != nil {
		return apiError(w, http.StatusBadRequest, CodeInvalid, err.Error())
	}
	d.scopeIncoming(r.Context(), id, rep)
	now := d.cfg.Clock.Now()
	if err := d.gates.accept(id, rep, now); err != nil {
		if errors.Is(err, errRateLimited) {
			w.Header().Set("Retry-After", "1")
			return apiError(w, http.StatusTooManyRequests, CodeRateLimited, err.Error())
		}
		return apiError(w, http.StatusInternalServerError, wire.CodeInternal, err.Error())
	}
	d.settle(r.Context(), id, rep, now)
	writeJSON(w, http.StatusOK, report.Answer{Gate: id, Commands: d.actions.deliver(id, now)})
	return "ok"
}

// settle takes in what an accepted report says: the resources it names,
// and the results of commands, each recorded as the action's audit line.
func (d *Dashboard) settle(ctx context.Context, id string, rep *report.Report, now time.Time) {
	for _, v := range rep.Resources {
		d.known.note(v.Resource, now.UnixMilli())
	}
	for _, a := range d.actions.results(id, rep.Results, now) {
		d.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "admin action", slog.Bool("audit", true),
			slog.String("operator", a.Operator), slog.String("action", "gate-resume"), slog.String("resource", a.Resource),
			slog.Uint64("value", a.Value), slog.String("note", a.Note), slog.String("gate", a.Gate),
			slog.String("command", a.ID), slog.String("outcome", a.State), slog.String("message", a.Message),
			slog.String("via", "dashboard"))
	}
}

// apiError writes an API error and returns its code.
func apiError(w http.ResponseWriter, status int, code, msg string) string {
	writeJSON(w, status, wire.ErrorBody{Code: code, Message: msg})
	return code
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"code":"INTERNAL","message":"dashboard: encoding response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
