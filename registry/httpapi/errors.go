package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
)

// Transport codes: the errors this package produces itself, before or
// around a registry call. Registry errors carry the registry's own codes.
const (
	CodeBadRequest       = "BAD_REQUEST"        // 400: body not a valid request
	CodeTooLarge         = "TOO_LARGE"          // 413: body above RequestBytesMax
	CodeUnauthenticated  = "UNAUTHENTICATED"    // 401: no identity or bad credentials
	CodeForbidden        = "FORBIDDEN"          // 403: identity may not call this (admin)
	CodeNotFound         = "NOT_FOUND"          // 404: no such endpoint
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED" // 405
	CodeInternal         = "INTERNAL"           // 500: an error without a code
	CodeNotReady         = "NOT_READY"          // 503: /readyz while the store does not answer
)

// ErrorBody is every error response: a stable code to branch on and a
// message for people.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// APIError is an error response as the Client returns it. It carries the
// HTTP status as well as the body.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	return "httpapi: " + http.StatusText(e.Status) + ": " + e.Code + ": " + e.Message
}

// Is makes errors.Is(err, &APIError{Code: c}) match by code alone, so
// callers can branch on codes without caring about messages or statuses.
func (e *APIError) Is(target error) bool {
	t, ok := target.(*APIError)
	return ok && t.Code == e.Code && t.Message == "" && t.Status == 0
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // only our own types are written; they always marshal
		status, b = http.StatusInternalServerError, []byte(`{"code":"INTERNAL","message":"httpapi: encoding response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// writeError writes err as an ErrorBody with the status its code maps to,
// and returns the code (for metrics).
func writeError(w http.ResponseWriter, err error) string {
	code := codeOf(err)
	status := statusFor(code)
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="fencegate"`)
	}
	if retryable[code] {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, ErrorBody{Code: code, Message: err.Error()})
	return code
}

// transportCode maps this package's sentinels to wire codes.
func transportCode(err error) string {
	switch {
	case errors.Is(err, ErrTooLarge):
		return CodeTooLarge
	case errors.Is(err, ErrBadRequest):
		return CodeBadRequest
	case errors.Is(err, ErrUnsupportedMediaType):
		return CodeUnsupportedMediaType
	case errors.Is(err, ErrNoCredentials), errors.Is(err, ErrBadCredentials):
		return CodeUnauthenticated
	case errors.Is(err, errForbidden):
		return CodeForbidden
	case errors.Is(err, ErrForbiddenResource):
		return CodeForbiddenResource
	case errors.Is(err, errMethod):
		return CodeMethodNotAllowed
	}
	return ""
}

var (
	errForbidden = errors.New("httpapi: forbidden")
	errMethod    = errors.New("httpapi: method not allowed")
)
