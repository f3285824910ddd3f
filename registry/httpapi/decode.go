package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
)

// RequestBytesMax bounds a request body, 64 KiB: far above any valid
// request (identifiers are a few hundred bytes), low enough that a client
// cannot make the server buffer much.
const RequestBytesMax = 64 << 10

// ErrBadRequest: the request body is not one JSON object of the endpoint's
// request type (syntax, unknown or duplicate field, wrong type, trailing
// data, a missing required field). The wire code is CodeBadRequest.
var ErrBadRequest = errors.New("httpapi: bad request")

// ErrTooLarge: the request body is above RequestBytesMax. The wire code is
// CodeTooLarge.
var ErrTooLarge = errors.New("httpapi: request body too large")

// readBody reads at most RequestBytesMax bytes of the body.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, RequestBytesMax+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading body: %v", ErrBadRequest, err)
	}
	if len(b) > RequestBytesMax {
		return nil, fmt.Errorf("%w: limit %d bytes", ErrTooLarge, RequestBytesMax)
	}
	return b, nil
}

// DecodeRequest strictly decodes b into v: exactly one JSON object, no
// unknown fields, no field given twice, no trailing data. Errors wrap
// ErrBadRequest (or ErrTooLarge). It is the one decoder every endpoint
// uses, and the fuzz target.
func DecodeRequest(b []byte, v any) error {
	if len(b) > RequestBytesMax {
		return fmt.Errorf("%w: limit %d bytes", ErrTooLarge, RequestBytesMax)
	}
	if err := checkKeys(b, fieldNames(v)); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return fmt.Errorf("%w: trailing data after JSON object", ErrBadRequest)
	}
	return nil
}

// fieldNames returns the JSON names of the struct v points to.
func fieldNames(v any) map[string]bool {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	names := map[string]bool{}
	if t.Kind() != reflect.Struct {
		return nil
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		if f.IsExported() && name != "-" {
			names[name] = true
		}
	}
	return names
}

// checkKeys rejects anything but a top-level object, a field named twice
// (encoding/json would silently keep the last) and a field name that is not
// exactly one of names (encoding/json would match it ignoring case). A nil
// names skips the name check. Requests are flat, so nested values are
// skipped whole.
func checkKeys(b []byte, names map[string]bool) error {
	d := json.NewDecoder(bytes.NewReader(b))
	t, err := d.Token()
	if err != nil {
		return err
	}
	if t != json.Delim('{') {
		return errors.New("want a JSON object")
	}
	seen := map[string]bool{}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return err
		}
		key, _ := k.(string)
		if names != nil && !names[key] {
			return fmt.Errorf("unknown field %q", key)
		}
		if seen[key] {
			return fmt.Errorf("field %q given twice", key)
		}
		seen[key] = true
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}
