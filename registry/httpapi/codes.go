package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/fencegate/fencegate/wire"
)

// statusClientClosed is nginx's 499: the client closed the request. It
// never reaches that client; it shows in logs and metrics.
const statusClientClosed = 499

// codeStatus is the HTTP status of every stable code, the registry's and
// this package's. A code not listed is a 500: a new registry code must be
// added here (TestEveryRegistryCodeHasAStatus keeps this honest).
var codeStatus = map[string]int{
	// registry codes
	"INVALID":          http.StatusBadRequest,
	"TTL_OUT_OF_RANGE": http.StatusBadRequest,
	"REQUEST_MISMATCH": http.StatusConflict,
	"BUSY":             http.StatusConflict,
	"WAIT_TIMEOUT":     http.StatusConflict,
	"CONFLICT":         http.StatusConflict,
	"WAITERS_FULL":     http.StatusTooManyRequests,
	"NOT_HOLDER":       http.StatusForbidden,
	"LEASE_EXPIRED":    http.StatusGone,
	"LEASE_BROKEN":     http.StatusGone,
	"EPOCH_REVOKED":    http.StatusForbidden,
	"NOT_FOUND":        http.StatusNotFound,
	"UNAVAILABLE":      http.StatusServiceUnavailable,
	"CORRUPT":          http.StatusInternalServerError,
	"FENCE_RANGE":      http.StatusServiceUnavailable,
	"STORE_FULL":       http.StatusInsufficientStorage,
	"PERMITS_MISMATCH": http.StatusConflict,
	// grant codes a request can cause (a status query with a bad grant)
	"MALFORMED": http.StatusBadRequest,
	// transport codes
	wire.CodeBadRequest:           http.StatusBadRequest,
	wire.CodeTooLarge:             http.StatusRequestEntityTooLarge,
	wire.CodeUnauthenticated:      http.StatusUnauthorized,
	wire.CodeForbidden:            http.StatusForbidden,
	wire.CodeForbiddenResource:    http.StatusForbidden,
	wire.CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	wire.CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	wire.CodeInternal:             http.StatusInternalServerError,
	wire.CodeNotReady:             http.StatusServiceUnavailable,
	wire.CodeTimeout:              http.StatusGatewayTimeout,
	wire.CodeCanceled:             statusClientClosed,
}

// statusFor returns the HTTP status of a code (500 for one not known).
func statusFor(code string) int {
	if s, ok := codeStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// retryable codes get a Retry-After hint: the same request may succeed
// shortly (with the same request ID, for an acquire).
var retryable = map[string]bool{"WAITERS_FULL": true, "CONFLICT": true, "UNAVAILABLE": true, "STORE_FULL": true}

// coded is any error with a stable code: *wire.Error, *grant.Error.
type coded interface{ Code() string }

// codeOf returns the wire code of err: this package's own first, then the
// first coded error in the chain, then context errors, else CodeInternal.
func codeOf(err error) string {
	if c := transportCode(err); c != "" {
		return c
	}
	var ce coded
	if errors.As(err, &ce) && ce.Code() != "" {
		return ce.Code()
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return wire.CodeTimeout
	case errors.Is(err, context.Canceled):
		return wire.CodeCanceled
	}
	return wire.CodeInternal
}
