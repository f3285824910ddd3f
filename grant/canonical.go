package grant

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// MessageBytesMax bounds an encoded message; Parse rejects anything longer
// before looking inside it.
const MessageBytesMax = 4096

// TimeLayout is the only accepted instant format: UTC, millisecond precision.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Instants must fall in these years: four digits, and after the Unix epoch.
const (
	yearMin = 1970
	yearMax = 9999
)

// The canonical encoding is one "name: value\n" line per field, in a fixed
// order, every field present, no blank lines, no carriage returns, no
// leading or trailing whitespace around values, ASCII printable only (the
// identifier rules already exclude anything else). Text lines were chosen
// over JSON or CBOR because the spec shows this form, a human can read a
// grant in a log, and a strict line parser is small enough to fuzz whole.

// splitFields checks the line structure of b against the fixed field list
// and returns the values in order. It names the field and reason on failure.
func splitFields(schema string, names []string, b []byte) ([]string, error) {
	fail := func(field string, line int, format string, args ...any) ([]string, error) {
		return nil, &FieldError{Schema: schema, Field: field, Line: line, Reason: fmt.Sprintf(format, args...)}
	}
	if len(b) > MessageBytesMax {
		return fail("", 0, "%d bytes, limit %d", len(b), MessageBytesMax)
	}
	if !utf8.Valid(b) {
		return fail("", 0, "not valid UTF-8")
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return fail("", 0, "must end with a newline")
	}
	values := make([]string, 0, len(names))
	seen := make(map[string]bool, len(names))
	rest := b
	for line := 1; len(rest) > 0; line++ {
		i := bytes.IndexByte(rest, '\n')
		text := rest[:i]
		rest = rest[i+1:]
		name, value, ok := bytes.Cut(text, []byte(": "))
		if !ok {
			return fail("", line, "want \"name: value\"")
		}
		field := string(name)
		if err := checkPrintable(value); err != nil {
			return fail(field, line, "%v", err)
		}
		if n := len(values); n >= len(names) || field != names[n] {
			return orderError(schema, names, values, seen, field, line)
		}
		seen[field] = true
		values = append(values, string(value))
	}
	if len(values) < len(names) {
		return fail(names[len(values)], 0, "missing")
	}
	return values, nil
}

// orderError explains why field is not the one expected at this line.
func orderError(schema string, names, values []string, seen map[string]bool, field string, line int) ([]string, error) {
	e := &FieldError{Schema: schema, Field: field, Line: line}
	known := false
	for _, n := range names {
		known = known || n == field
	}
	switch {
	case !known:
		e.Reason = "unknown field"
	case seen[field]:
		e.Reason = "duplicate field"
	default:
		e.Reason = fmt.Sprintf("out of order: expected %s", names[len(values)])
	}
	return nil, e
}

// checkPrintable rejects control characters, leading or trailing whitespace
// and non-ASCII bytes in a value.
func checkPrintable(v []byte) error {
	if len(v) == 0 {
		return errors.New("empty value")
	}
	if v[0] == ' ' || v[0] == '\t' {
		return errors.New("leading whitespace")
	}
	if c := v[len(v)-1]; c == ' ' || c == '\t' {
		return errors.New("trailing whitespace")
	}
	for i, c := range v {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("control character 0x%02x at byte %d", c, i)
		}
		if c >= 0x80 {
			return fmt.Errorf("non-ASCII byte 0x%02x at byte %d", c, i)
		}
	}
	return nil
}

// parseUint parses a canonical decimal uint64: no sign, no leading zero.
func parseUint(s string) (uint64, error) {
	if s[0] == '+' || s[0] == '-' {
		return 0, errors.New("sign not allowed")
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, errors.New("leading zero")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("not a decimal number")
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, errors.New("overflows uint64")
	}
	return n, nil
}

// parseTime parses an instant in TimeLayout, rejecting any other spelling.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(TimeLayout, s)
	if err != nil || t.Format(TimeLayout) != s {
		return time.Time{}, fmt.Errorf("want UTC instant like %s", TimeLayout)
	}
	return t, checkInstant(t)
}

// checkInstant requires UTC, millisecond precision and a four-digit year.
func checkInstant(t time.Time) error {
	if t.Location() != time.UTC {
		return errors.New("not UTC")
	}
	if !t.Equal(t.Truncate(time.Millisecond)) {
		return errors.New("finer than millisecond precision")
	}
	if y := t.Year(); y < yearMin || y > yearMax {
		return fmt.Errorf("year %d outside %d..%d", y, yearMin, yearMax)
	}
	return nil
}

// lineWriter appends canonical "name: value\n" lines.
type lineWriter struct{ b []byte }

func (w *lineWriter) str(name, v string) {
	w.b = append(w.b, name...)
	w.b = append(w.b, ": "...)
	w.b = append(w.b, v...)
	w.b = append(w.b, '\n')
}

func (w *lineWriter) uint(name string, v uint64) {
	w.b = append(w.b, name...)
	w.b = append(w.b, ": "...)
	w.b = strconv.AppendUint(w.b, v, 10)
	w.b = append(w.b, '\n')
}

func (w *lineWriter) time(name string, t time.Time) {
	w.b = append(w.b, name...)
	w.b = append(w.b, ": "...)
	w.b = t.UTC().AppendFormat(w.b, TimeLayout)
	w.b = append(w.b, '\n')
}
