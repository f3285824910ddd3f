package httpapi

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// ErrUnsupportedMediaType: a request that carries a body does not say
// "Content-Type: application/json". The wire code is
// CodeUnsupportedMediaType (415).
//
// Why it matters: a browser sends a cross-site POST as text/plain,
// application/x-www-form-urlencoded or multipart/form-data without asking
// the server first (no CORS preflight), and it attaches a client
// certificate it holds. Were such a body acted on as JSON, any web page an
// admin visits could raise floors or revoke epochs in the admin's name.
// A cross-site page cannot send application/json without a preflight,
// which this server never answers with permission.
var ErrUnsupportedMediaType = errors.New("httpapi: unsupported media type")

// CheckJSONContentType refuses, before anything reads its body, a request
// that carries one (every POST, PUT and PATCH, and any request with a
// non-empty or unknown-length body) unless its Content-Type is
// application/json, with at most a charset parameter of utf-8 (any letter
// case). The error wraps ErrUnsupportedMediaType. A request without a
// body passes. Exported so the dashboard's report endpoint applies the
// same rule.
func CheckJSONContentType(r *http.Request) error {
	if !carriesBody(r) {
		return nil
	}
	ct := r.Header.Values("Content-Type")
	if len(ct) != 1 {
		return fmt.Errorf("%w: %s %s: want one Content-Type: application/json header, got %d", ErrUnsupportedMediaType, r.Method, r.URL.Path, len(ct))
	}
	if ct[0] == "application/json" { // what the SDK sends: no parameters to parse
		return nil
	}
	mt, params, err := mime.ParseMediaType(ct[0])
	if err != nil || mt != "application/json" {
		return fmt.Errorf("%w: %s %s: Content-Type %q, want application/json", ErrUnsupportedMediaType, r.Method, r.URL.Path, ct[0])
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return fmt.Errorf("%w: %s %s: Content-Type %q: only charset=utf-8 may follow application/json", ErrUnsupportedMediaType, r.Method, r.URL.Path, ct[0])
		}
	}
	return nil
}

// carriesBody reports whether r has, or may have, a body.
func carriesBody(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		return true
	}
	return r.ContentLength != 0
}
