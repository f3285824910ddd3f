package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"

	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/registry/httpapi"
)

// Codes of the report endpoint's errors (httpapi.ErrorBody), beside the
// API's UNAUTHENTICATED, FORBIDDEN, BAD_REQUEST, TOO_LARGE,
// UNSUPPORTED_MEDIA_TYPE and METHOD_NOT_ALLOWED.
const (
	CodeRateLimited = "RATE_LIMITED" // 429: within report.ReportSpacingMsMin of the last report
	CodeInvalid     = "INVALID"      // 400: a report outside the format or its bounds
)

// ingest is POST report.ReportPath: one gate's report, answered with the
// commands queued for it. Checks, in order: method, identity, media type
// (before the body is read), gate reporter, size, format, rate.
func (d *Dashboard) ingest(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		apiError(w, http.StatusMethodNotAllowed, httpapi.CodeMethodNotAllowed, "dashboard: "+report.ReportPath+" wants POST")
		return
	}
	id, err := d.cfg.Auth.Authenticate(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="fencegate"`)
		apiError(w, http.StatusUnauthorized, httpapi.CodeUnauthenticated, err.Error())
		return
	}
	if err := httpapi.CheckJSONContentType(r); err != nil {
		apiError(w, http.StatusUnsupportedMediaType, httpapi.CodeUnsupportedMediaType, err.Error())
		return
	}
	if !slices.Contains(d.cfg.GateReporters, id) {
		apiError(w, http.StatusForbidden, httpapi.CodeForbidden, fmt.Sprintf("dashboard: %s is not a gate reporter (serve --gate-reporter)", id))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, report.ReportBytesMax+1))
	if err != nil {
		apiError(w, http.StatusBadRequest, httpapi.CodeBadRequest, "dashboard: read report: "+err.Error())
		return
	}
	if len(body) > report.ReportBytesMax {
		apiError(w, http.StatusRequestEntityTooLarge, httpapi.CodeTooLarge, fmt.Sprintf("dashboard: report over %d bytes", report.ReportBytesMax))
		return
	}
	rep, err := report.Decode(body)
	if err != nil {
		apiError(w, http.StatusBadRequest, CodeInvalid, err.Error())
		return
	}
	now := d.cfg.Clock.Now()
	if err := d.gates.accept(id, rep, now); err != nil {
		if errors.Is(err, errRateLimited) {
			w.Header().Set("Retry-After", "1")
			apiError(w, http.StatusTooManyRequests, CodeRateLimited, err.Error())
			return
		}
		apiError(w, http.StatusInternalServerError, httpapi.CodeInternal, err.Error())
		return
	}
	for _, v := range rep.Resources {
		d.known.note(v.Resource, now.UnixMilli())
	}
	for _, a := range d.actions.results(id, rep.Results, now) {
		d.cfg.Logger.LogAttrs(r.Context(), slog.LevelInfo, "admin action", slog.Bool("audit", true),
			slog.String("operator", a.Operator), slog.String("action", "gate-resume"), slog.String("resource", a.Resource),
			slog.Uint64("value", a.Value), slog.String("note", a.Note), slog.String("gate", a.Gate),
			slog.String("command", a.ID), slog.String("outcome", a.State), slog.String("message", a.Message),
			slog.String("via", "dashboard"))
	}
	writeJSON(w, http.StatusOK, report.Answer{Gate: id, Commands: d.actions.deliver(id, now)})
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, httpapi.ErrorBody{Code: code, Message: msg})
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
