package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/fencegate/fencegate/wire"
)

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
	body := wire.ErrorBody{Code: code, Message: err.Error()}
	if be := (*wire.BusyError)(nil); errors.As(err, &be) {
		body.Message, body.Busy = be.Error(), &be.BusyDetail
	}
	writeJSON(w, status, body)
	return code
}

// transportCode maps this package's sentinels to wire codes.
func transportCode(err error) string {
	switch {
	case errors.Is(err, ErrTooLarge):
		return wire.CodeTooLarge
	case errors.Is(err, ErrBadRequest):
		return wire.CodeBadRequest
	case errors.Is(err, ErrUnsupportedMediaType):
		return wire.CodeUnsupportedMediaType
	case errors.Is(err, ErrNoCredentials), errors.Is(err, ErrBadCredentials):
		return wire.CodeUnauthenticated
	case errors.Is(err, errForbidden):
		return wire.CodeForbidden
	case errors.Is(err, ErrForbiddenResource):
		return wire.CodeForbiddenResource
	case errors.Is(err, errMethod):
		return wire.CodeMethodNotAllowed
	}
	return ""
}

var (
	errForbidden = errors.New("httpapi: forbidden")
	errMethod    = errors.New("httpapi: method not allowed")
)
