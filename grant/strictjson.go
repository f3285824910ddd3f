package grant

import (
	"bytes"
	"encoding/json"

	"fmt"
	"io"
	"reflect"
	"strings"
)

// strictJSON decodes exactly one JSON value into v, rejecting what
// encoding/json alone lets through: a field given twice (it keeps the
// last, so two readers of one bundle file could see two different key
// states), a field name in another letter case (it matches names ignoring
// case), unknown fields and trailing data.
func strictJSON(b []byte, v any) error {
	if err := checkJSONKeys(json.NewDecoder(bytes.NewReader(b)), reflect.TypeOf(v), ""); err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("trailing data after JSON value")
	}
	var extra json.RawMessage
	if err := d.Decode(&extra); err != io.EOF {
		return fmt.Errorf("trailing data after JSON value")
	}
	return nil
}

// checkJSONKeys reads one JSON value of Go type t from d and checks that
// every object in it names each field of its struct at most once and
// exactly as the field's json tag spells it. Values of the wrong shape
// are left for Decode to report, except that an object or array where t
// wants neither is an error here. path names the value in errors.
func checkJSONKeys(d *json.Decoder, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := d.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		return nil // null: Decode leaves the zero value
	}
	switch {
	case tok == json.Delim('{') && t.Kind() == reflect.Struct:
		return checkJSONObject(d, t, path)
	case tok == json.Delim('[') && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for i := 0; d.More(); i++ {
			if err := checkJSONKeys(d, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
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

func checkJSONObject(d *json.Decoder, t reflect.Type, path string) error {
	fields := jsonFields(t)
	seen := map[string]bool{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		f, ok := fields[key]
		switch {
		case !ok:
			return fmt.Errorf("%s: unknown field %q (names are case-sensitive)", pathOr(path), key)
		case seen[key]:
			return fmt.Errorf("%s: field %q given twice", pathOr(path), key)
		}
		seen[key] = true
		if err := checkJSONKeys(d, f.Type, path+"."+key); err != nil {
			return err
		}
	}
	_, err := d.Token() // '}'
	return err
}

// jsonFields maps the exact JSON names of t's exported fields to them.
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
