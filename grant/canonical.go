package grant

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
// and returns the values in order, as substrings of one copy of b. It names
// the field and reason on failure.
func splitFields(schema string, names []string, b []byte) ([]string, error) {
	return splitFieldsMin(schema, names, len(names), b)
}

// splitFieldsMin is splitFields for a message whose fields after the
// first required may be left off (together, from the end).
func splitFieldsMin(schema string, names []string, required int, b []byte) ([]string, error) {
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
	rest := string(b)
	for line := 1; len(rest) > 0; line++ {
		i := strings.IndexByte(rest, '\n')
		text := rest[:i]
		rest = rest[i+1:]
		field, value, ok := strings.Cut(text, ": ")
		if !ok {
			return fail("", line, "want \"name: value\"")
		}
		if err := checkPrintable(value); err != nil {
			return fail(field, line, "%v", err)
		}
		if n := len(values); n >= len(names) || field != names[n] {
			return orderError(schema, names, len(values), field, line)
		}
		values = append(values, value)
	}
	if len(values) < required {
		return fail(names[len(values)], 0, "missing")
	}
	return values, nil
}

// orderError explains why field is not the one expected after n fields.
func orderError(schema string, names []string, n int, field string, line int) ([]string, error) {
	e := &FieldError{Schema: schema, Field: field, Line: line}
	i := slices.Index(names, field)
	switch {
	case i < 0:
		e.Reason = "unknown field"
	case i < n:
		e.Reason = "duplicate field"
	default:
		e.Reason = fmt.Sprintf("out of order: expected %s", names[n])
	}
	return nil, e
}

// checkPrintable rejects control characters, leading or trailing whitespace
// and non-ASCII bytes in a value.
func checkPrintable(v string) error {
	if len(v) == 0 {
		return errors.New("empty value")
	}
	if v[0] == ' ' || v[0] == '\t' {
		return errors.New("leading whitespace")
	}
	if c := v[len(v)-1]; c == ' ' || c == '\t' {
		return errors.New("trailing whitespace")
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
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

// errBadInstant is parseTime's one syntax error, made once: this runs on
// every grant a gate checks.
var errBadInstant = errors.New("want UTC instant like " + TimeLayout)

// parseTime parses an instant in TimeLayout, rejecting any other spelling.
// It reads the fixed positions itself: time.Parse is several times slower
// and this runs on every segment a gate checks.
func parseTime(s string) (time.Time, error) {
	if len(s) != len(TimeLayout) || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
		s[13] != ':' || s[16] != ':' || s[19] != '.' || s[23] != 'Z' {
		return time.Time{}, errBadInstant
	}
	var n [7]int
	for i, span := range [7][2]int{{0, 4}, {5, 7}, {8, 10}, {11, 13}, {14, 16}, {17, 19}, {20, 23}} {
		for _, c := range []byte(s[span[0]:span[1]]) {
			if c < '0' || c > '9' {
				return time.Time{}, errBadInstant
			}
			n[i] = n[i]*10 + int(c-'0')
		}
	}
	t := time.Date(n[0], time.Month(n[1]), n[2], n[3], n[4], n[5], n[6]*int(time.Millisecond), time.UTC)
	// time.Date normalises 30 February to 2 March; a canonical instant
	// must come back unchanged.
	if y, mo, d := t.Date(); y != n[0] || int(mo) != n[1] || d != n[2] || t.Hour() != n[3] || t.Minute() != n[4] || t.Second() != n[5] {
		return time.Time{}, errBadInstant
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

func (w *lineWriter) str(name, v string)           { w.b = appendStrLine(w.b, name, v) }
func (w *lineWriter) digest(name string, d Digest) { w.b = appendDigestLine(w.b, name, d) }
func (w *lineWriter) uint(name string, v uint64)   { w.b = appendUintLine(w.b, name, v) }
func (w *lineWriter) time(name string, t time.Time) {
	w.b = appendTimeLine(w.b, name, t)
}

// The lines of a canonical form, appended to b and returned (so a caller
// may encode into a buffer on its stack: Grant.Digest).

func appendStrLine(b []byte, name, v string) []byte {
	b = append(b, name...)
	b = append(b, ": "...)
	b = append(b, v...)
	return append(b, '\n')
}

func appendDigestLine(b []byte, name string, d Digest) []byte {
	b = append(b, name...)
	b = append(b, ": "+digestPrefix...)
	b = hex.AppendEncode(b, d[:])
	return append(b, '\n')
}

func appendUintLine(b []byte, name string, v uint64) []byte {
	b = append(b, name...)
	b = append(b, ": "...)
	b = strconv.AppendUint(b, v, 10)
	return append(b, '\n')
}

func appendTimeLine(b []byte, name string, t time.Time) []byte {
	b = append(b, name...)
	b = append(b, ": "...)
	b = appendTime(b, t)
	return append(b, '\n')
}

// appendTime appends t in TimeLayout (UTC, milliseconds, four-digit year).
func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	b = appendDigits(b, y, 4)
	b = append(b, '-')
	b = appendDigits(b, int(mo), 2)
	b = append(b, '-')
	b = appendDigits(b, d, 2)
	b = append(b, 'T')
	b = appendDigits(b, t.Hour(), 2)
	b = append(b, ':')
	b = appendDigits(b, t.Minute(), 2)
	b = append(b, ':')
	b = appendDigits(b, t.Second(), 2)
	b = append(b, '.')
	b = appendDigits(b, t.Nanosecond()/int(time.Millisecond), 3)
	return append(b, 'Z')
}

// appendDigits appends v zero-padded to width digits; v is non-negative
// and fits (checkInstant guarantees four-digit years).
func appendDigits(b []byte, v, width int) []byte {
	var buf [8]byte
	for i := width - 1; i >= 0; i-- {
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, buf[:width]...)
}
