// Package strictjson is the module's one strict JSON decoder, for every
// wire and file form that is JSON: trust bundles and key files (grant),
// envelopes and jobs (gate), registry requests (registry/httpapi).
// encoding/json alone keeps the last of a field given twice (two readers
// of one input could then act on different values) and matches field
// names ignoring letter case; Decode refuses both, at any depth, with
// unknown fields and trailing data.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Decode decodes b, exactly one JSON object, into the struct v points to.
// Every object in b must name each field of its struct at most once and
// exactly as the field's json tag spells it; nothing may follow the
// object. The error says what and where; callers wrap it in their own
// stable code.
func Decode(b []byte, v any) error {
	t := structType(reflect.TypeOf(v))
	// One walk checks the strict rules and, as far as it goes, the syntax;
	// json.Unmarshal then validates and decodes. Whatever either refuses
	// is answered as before: invalid JSON by decodeInvalid (json.Valid,
	// asked only on a refusal, says which), valid JSON by the walk's or
	// encoding/json's own error. v is written only after the walk passed.
	s := &scanner{b: b}
	s.ws()
	if s.peek() != '{' {
		return refuse(b, v, t, errors.New("want a JSON object"))
	}
	if t == nil || (t.Kind() != reflect.Struct && t.Kind() != reflect.Map) {
		return refuse(b, v, t, fmt.Errorf("strictjson: Decode into %T, want a pointer to a struct or a map", v))
	}
	if e := s.object(t); e != nil {
		return refuse(b, v, t, e.err())
	}
	if s.conflict { // a struct whose JSON names encoding/json ignores: its refusal, as before
		if !json.Valid(b) {
			return decodeInvalid(b, v, t)
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		return d.Decode(v)
	}
	// The walk found every key by its exact name among the struct's, so
	// unknown fields cannot reach encoding/json; its validation runs
	// before it touches v.
	err := json.Unmarshal(b, v)
	if se := (*json.SyntaxError)(nil); errors.As(err, &se) && !json.Valid(b) {
		return decodeInvalid(b, v, t)
	}
	return err
}

// refuse is Decode's answer to b when the walk refused it with err: err
// if b is one JSON value, else what decodeInvalid finds.
func refuse(b []byte, v any, t reflect.Type, err error) error {
	if !json.Valid(b) {
		return decodeInvalid(b, v, t)
	}
	return err
}

// decodeInvalid is Decode of input that is not one JSON value: the token
// walk finds what it finds (a repeat before the syntax error, or the
// syntax error itself, as encoding/json words it).
func decodeInvalid(b []byte, v any, t reflect.Type) error {
	d := json.NewDecoder(bytes.NewReader(b))
	tok, err := d.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return errors.New("want a JSON object")
	}
	if t == nil || (t.Kind() != reflect.Struct && t.Kind() != reflect.Map) {
		return fmt.Errorf("strictjson: Decode into %T, want a pointer to a struct or a map", v)
	}
	if err := checkObject(d, t, ""); err != nil {
		return err
	}
	d = json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

func structType(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// rawMessage is json.RawMessage, whose contents are not this decoder's.
var rawMessage = reflect.TypeOf(json.RawMessage(nil))

// checkValue reads one JSON value of Go type t from d and checks the
// objects in it. Values of the wrong shape are left for Decode to report,
// except that an object or array where t wants neither is an error here.
// path names the value in errors.
func checkValue(d *json.Decoder, t reflect.Type, path string) error {
	t = structType(t)
	if t == rawMessage || t.Kind() == reflect.Interface {
		var skip json.RawMessage
		return d.Decode(&skip) // not a struct's: anything goes
	}
	tok, err := d.Token()
	if err != nil {
		return err
	}
	switch {
	case tok == nil:
		return nil // null: Decode leaves the zero value
	case tok == json.Delim('{') && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map):
		return checkObject(d, t, path)
	case tok == json.Delim('[') && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for i := 0; d.More(); i++ {
			if err := checkValue(d, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err := d.Token() // ']'
		return err
	case tok == json.Delim('{') || tok == json.Delim('['):
		return fmt.Errorf("%s: unexpected %v for %s", pathOr(path), tok, t)
	}
	return nil // a scalar: Decode checks its type
}

// checkObject checks the members of an object whose '{' d has read, up
// to and including its '}': a struct's by their exact json names, a map's
// for repeats only.
func checkObject(d *json.Decoder, t reflect.Type, path string) error {
	var fields map[string]reflect.StructField
	if t.Kind() == reflect.Struct {
		fields = jsonFields(t)
	}
	seen := map[string]bool{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if seen[key] {
			return fmt.Errorf("%s: field %q given twice", pathOr(path), key)
		}
		seen[key] = true
		var elem reflect.Type
		if fields == nil {
			elem = t.Elem() // a map's values
		} else if f, ok := fields[key]; ok {
			elem = f.Type
		} else {
			return fmt.Errorf("%s: unknown field %q (names are case-sensitive)", pathOr(path), key)
		}
		if err := checkValue(d, elem, path+"."+key); err != nil {
			return err
		}
	}
	_, err := d.Token() // '}'
	return err
}

// Names returns the field names Decode accepts at the top level of the
// struct v is or points to (nil for anything else), in no order.
func Names(v any) []string {
	t := structType(reflect.TypeOf(v))
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for name := range jsonFields(t) {
		out = append(out, name)
	}
	return out
}

// jsonFields maps the exact JSON names of t's exported fields to them
// (the module's wire structs embed no structs, so no promoted fields).
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	fields := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		if f.IsExported() && name != "-" {
			fields[name] = f
		}
	}
	return fields
}

func pathOr(path string) string {
	if path == "" {
		return "top level"
	}
	return strings.TrimPrefix(path, ".")
}
