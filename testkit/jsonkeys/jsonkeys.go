// Package jsonkeys is the fuzz targets' oracle for strict JSON decoding,
// kept apart from the decoder it judges (internal/strictjson): a token
// walk that finds a key given twice in one object or not exactly one of
// the names the form allows, at any depth, or data after the value. A
// decoder that accepts an input Problem flags is not strict. FieldsDiffer
// holds a package's own types for a wire form to the wire's JSON names.
package jsonkeys

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
)

// Problem walks b independently of the decoder under test and names
// the first object key, at any depth, that repeats within its object or is
// not exactly one of names, or data after the value; "" when there is
// none or b is not JSON.
func Problem(b []byte, names map[string]bool) string {
	type frame struct {
		object, wantKey bool
		seen            map[string]bool
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	d := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey {
			if k, ok := tok.(string); ok {
				f := stack[n-1]
				switch {
				case f.seen[k]:
					return "duplicate key " + k
				case !names[k]:
					return "unknown key " + k
				}
				f.seen[k], f.wantKey = true, false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, wantKey: true, seen: map[string]bool{}})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
		if len(stack) == 0 {
			if _, err := d.Token(); err != io.EOF {
				return "trailing data"
			}
			return ""
		}
	}
}

// FieldsDiffer compares two struct types' JSON field tags in order and
// describes the first difference, "" when there is none: a package that
// writes a wire form with types of its own holds them to the wire's.
func FieldsDiffer(ours, theirs reflect.Type) string {
	if ours.NumField() != theirs.NumField() {
		return fmt.Sprintf("%v has %d fields, %v %d", ours, ours.NumField(), theirs, theirs.NumField())
	}
	for i := range ours.NumField() {
		if a, b := ours.Field(i).Tag.Get("json"), theirs.Field(i).Tag.Get("json"); a != b {
			return fmt.Sprintf("%v field %d is %q, %v's %q", ours, i, a, theirs, b)
		}
	}
	return ""
}
