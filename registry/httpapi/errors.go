package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/fencegate/fencegate/wire"
)

// Header values every JSON answer carries, shared: net/http only reads
// them.
var (
	headerJSON    = []string{"application/json"}
	headerNoStore = []string{"no-store"}
)

// responseBuffers are writeJSON's encoding buffers, reused across calls.
var responseBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// responseBufferBytesMax is the largest buffer put back in the pool, 64
// KiB: a rare large answer (a page of locks) is not kept.
const responseBufferBytesMax = 64 << 10

// writeJSON writes v, as json.Marshal encodes it and a newline, with
// status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := responseBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= responseBufferBytesMax {
			buf.Reset()
			responseBuffers.Put(buf)
		}
	}()
	buf.Reset()
	if err := json.NewEncoder(buf).Encode(v); err != nil { // only our own types are written; they always marshal
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"code":"INTERNAL","message":"httpapi: encoding response"}` + "\n")
	}
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = headerJSON, headerNoStore
	w.WriteHeader(status)
	w.Write(buf.Bytes())
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
	writeJSON(w, status, errorBody(code, err))
	return code
}

// errorBody is err's ErrorBody under code (codeOf(err)): a batch's
// operation answers its error with the same body as its own endpoint.
func errorBody(code string, err error) wire.ErrorBody {
	body := wire.ErrorBody{Code: code, Message: err.Error()}
	if be := (*wire.BusyError)(nil); errors.As(err, &be) {
		body.Message, body.Busy = be.Error(), &be.BusyDetail
	}
	return body
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
