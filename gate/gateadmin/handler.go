package gateadmin

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
)

// PathPrefix is where Handler's routes live:
//
//	GET  /v1/gate/status?resource=R   → Status
//	POST /v1/gate/resume {resource, floor, note} → Status
const PathPrefix = "/v1/gate/"

// RequestBytesMax bounds a request body, 4 KiB.
const RequestBytesMax = 4096

// Authenticator yields the caller's identity from a request, as the
// service authenticates its other callers. registry/httpapi's
// Authenticator (mTLS, bearer tokens) satisfies it.
type Authenticator interface {
	Authenticate(r *http.Request) (string, error)
}

// HandlerConfig wires Handler.
type HandlerConfig struct {
	// Gate and DB are a sqlgate gate and the database it applies in; or
	// Store is a gate that keeps its own records (objgate, redisgate).
	// One of the two is required.
	Gate  *sqlgate.Gate
	DB    *sql.DB
	Store RecordingGate
	Auth  Authenticator // required: no identity, no admin
	// Admins are the identities allowed in. Required: an endpoint nobody
	// may use is a mistake.
	Admins []string
	// Logger records every resume (audit=true). Optional, defaults to
	// slog.Default().
	Logger *slog.Logger
}

// Error codes of Handler's answers ({"code", "message"}).
const (
	CodeUnauthenticated = "UNAUTHENTICATED" // 401
	CodeForbidden       = "FORBIDDEN"       // 403
	CodeBadRequest      = "BAD_REQUEST"     // 400: method, shape
	CodeInvalid         = "INVALID"         // 400: a value that can never work
	CodeResumeRefused   = "RESUME_REFUSED"  // 409: gate.ErrResumeRefused
	CodeInternal        = "INTERNAL"        // 500
)

// ErrorBody is an error answer.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Handler returns the admin endpoint; mount it at PathPrefix. It refuses
// a config without exactly one of Gate and DB or Store, or without Auth
// or Admins, by panicking at construction (a programming error, found at
// start).
func Handler(cfg HandlerConfig) http.Handler {
	onSQL, onStore := cfg.Gate != nil && cfg.DB != nil, cfg.Store != nil
	if onSQL == onStore || cfg.Auth == nil || len(cfg.Admins) == 0 {
		panic("gateadmin: Handler needs Gate and DB or Store, Auth and at least one admin")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &handler{cfg: cfg}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathPrefix+"status", h.status)
	mux.HandleFunc("POST "+PathPrefix+"resume", h.resume)
	mux.HandleFunc(PathPrefix, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("gateadmin: no %s %s (GET %sstatus, POST %sresume)", r.Method, r.URL.Path, PathPrefix, PathPrefix))
	})
	return h.authenticated(mux)
}

type handler struct{ cfg HandlerConfig }

// authenticated lets only named admins through, before anything is read.
func (h *handler) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := h.cfg.Auth.Authenticate(r)
		if err != nil {
			writeError(w, http.StatusUnauthorized, CodeUnauthenticated, "gateadmin: "+err.Error())
			return
		}
		if !slices.Contains(h.cfg.Admins, id) {
			writeError(w, http.StatusForbidden, CodeForbidden, fmt.Sprintf("gateadmin: %s is not an admin identity of this gate", id))
			return
		}
		next.ServeHTTP(w, r.WithContext(withOperator(r.Context(), id)))
	})
}

// admin is the request's Admin, acting as the authenticated identity.
func (h *handler) admin(r *http.Request) Admin {
	if h.cfg.Store != nil {
		return &Store{Gate: h.cfg.Store, Operator: operatorFrom(r.Context())}
	}
	return &Local{Gate: h.cfg.Gate, DB: h.cfg.DB, Operator: operatorFrom(r.Context())}
}

func (h *handler) status(w http.ResponseWriter, r *http.Request) {
	st, err := h.admin(r).Status(r.Context(), r.URL.Query().Get("resource"))
	answer(w, st, err)
}

func (h *handler) resume(w http.ResponseWriter, r *http.Request) {
	var req ResumeRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, RequestBytesMax))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "gateadmin: resume body: "+err.Error())
		return
	}
	st, err := h.admin(r).Resume(r.Context(), req)
	outcome := "ok"
	if err != nil {
		outcome = codeOf(err)
	}
	h.cfg.Logger.LogAttrs(r.Context(), slog.LevelInfo, "admin action", slog.Bool("audit", true),
		slog.String("operator", operatorFrom(r.Context())), slog.String("action", "gate-resume"), slog.String("resource", req.Resource),
		slog.Uint64("value", req.Floor), slog.String("note", req.Note), slog.String("outcome", outcome))
	answer(w, st, err)
}

func answer(w http.ResponseWriter, st Status, err error) {
	if err != nil {
		writeError(w, httpStatus(codeOf(err)), codeOf(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func codeOf(err error) string {
	switch {
	case errors.Is(err, gate.ErrResumeRefused):
		return CodeResumeRefused
	case errors.Is(err, ErrInvalid):
		return CodeInvalid
	}
	return CodeInternal
}

func httpStatus(code string) int {
	switch code {
	case CodeResumeRefused:
		return http.StatusConflict
	case CodeInvalid:
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

type operatorKey struct{}

func withOperator(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, operatorKey{}, id)
}

func operatorFrom(ctx context.Context) string {
	id, _ := ctx.Value(operatorKey{}).(string)
	return id
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, ErrorBody{Code: code, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
