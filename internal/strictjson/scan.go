package strictjson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// The fast check. The scanner walks b's bytes before anything has
// validated them: on valid JSON it checks exactly what checkValue checks,
// with no token values, no path strings unless there is an error, and a
// bit per struct field instead of a set of names. On invalid JSON it
// only has to end (every read bounded, every loop advancing, nesting
// capped): whatever it answers there, Decode learns from json.Valid or
// json.Unmarshal that b is not JSON and answers with the token walk
// (checkValue), whose errors are encoding/json's.

// fieldSet is a struct's JSON names and their order (the bit a field
// takes in an object's seen mask).
type fieldSet struct {
	index map[string]int
	types []reflect.Type
	// conflict: two exported fields share a JSON name, which
	// encoding/json then ignores (an unknown field to its decoder).
	conflict bool
}

// fieldSets caches fieldSet by struct type: wire structs are few.
var fieldSets sync.Map // reflect.Type → *fieldSet

func fieldsOf(t reflect.Type) *fieldSet {
	if fs, ok := fieldSets.Load(t); ok {
		return fs.(*fieldSet)
	}
	fs := &fieldSet{index: map[string]int{}}
	for name, f := range jsonFields(t) {
		fs.index[name] = len(fs.types)
		fs.types = append(fs.types, f.Type)
	}
	exported := 0
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
			exported++
		}
	}
	fs.conflict = exported != len(fs.types)
	v, _ := fieldSets.LoadOrStore(t, fs)
	return v.(*fieldSet)
}

// scanError is a check's refusal, with the path to it built on the way
// out (innermost segment first).
type scanError struct {
	segs []string
	msg  string
}

func (e *scanError) at(seg string) *scanError { e.segs = append(e.segs, seg); return e }

func (e *scanError) err() error {
	var b strings.Builder
	for i := len(e.segs) - 1; i >= 0; i-- {
		b.WriteString(e.segs[i])
	}
	return fmt.Errorf("%s: %s", pathOr(b.String()), e.msg)
}

// scanner walks JSON, valid or not (see above).
type scanner struct {
	b     []byte
	i     int
	depth int
	// conflict: an object of a struct type with a fieldSet conflict was
	// walked.
	conflict bool
}

// depthMax is encoding/json's nesting limit: deeper input is not valid
// to it, so the walk stops there.
const depthMax = 10000

// errNotJSON is the walk's refusal of input it cannot walk: not one JSON
// value (Decode then answers with json.Valid's verdict).
const errNotJSON = "not JSON"

// peek is the byte at s.i, or 0 past the end (0 is never a JSON token's
// first byte).
func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// str reads a string at s.i ('"') and returns its raw contents (escapes
// left in) and whether it has any.
// At the end of b unclosed, it returns ok false with s.i past the end.
func (s *scanner) str() (raw []byte, esc, ok bool) {
	start := s.i + 1
	for s.i = start; s.i < len(s.b) && s.b[s.i] != '"'; s.i++ {
		if s.b[s.i] == '\\' {
			esc = true
			s.i++
		}
	}
	if s.i >= len(s.b) {
		s.i = len(s.b)
		return nil, false, false
	}
	s.i++
	return s.b[start : s.i-1], esc, true
}

// skip passes over one value at s.i (on invalid JSON, over something or
// to the end).
func (s *scanner) skip() {
	switch s.peek() {
	case '"':
		s.str()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				s.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				return
			}
		}
	default: // a number, true, false or null
		for s.i < len(s.b) && !endsScalar(s.b[s.i]) {
			s.i++
		}
	}
}

func endsScalar(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ']', '}':
		return true
	}
	return false
}

// value checks one value of Go type t at s.i, as checkValue does.
func (s *scanner) value(t reflect.Type) *scanError {
	t = structType(t)
	c := s.peek()
	switch {
	case c == 0:
		return &scanError{msg: errNotJSON}
	case t == rawMessage || t.Kind() == reflect.Interface || (c != '{' && c != '['):
		s.skip()
		return nil
	case c == '{' && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map):
		return s.object(t)
	case c == '[' && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		if s.depth++; s.depth > depthMax {
			return &scanError{msg: errNotJSON}
		}
		s.i++
		for n := 0; ; n++ {
			at := s.i
			s.ws()
			if s.peek() == ']' {
				s.i++
				s.depth--
				return nil
			}
			if s.peek() == ',' {
				s.i++
				s.ws()
			}
			if e := s.value(t.Elem()); e != nil {
				return e.at(fmt.Sprintf("[%d]", n))
			}
			if s.i == at || s.i >= len(s.b) { // stuck or at the end: not JSON
				return &scanError{msg: errNotJSON}
			}
		}
	}
	return &scanError{msg: fmt.Sprintf("unexpected %c for %s", c, t)}
}

// object checks an object at s.i, as checkObject does.
func (s *scanner) object(t reflect.Type) *scanError {
	var (
		fs       *fieldSet
		small    [1]uint64 // the seen bits of a struct of up to 64 fields
		seenBits []uint64
		seenKeys map[string]bool
	)
	if t.Kind() == reflect.Struct {
		fs, seenBits = fieldsOf(t), small[:]
		if len(fs.types) > 64 {
			seenBits = make([]uint64, (len(fs.types)+63)/64)
		}
		s.conflict = s.conflict || fs.conflict
	}
	if s.depth++; s.depth > depthMax {
		return &scanError{msg: errNotJSON}
	}
	s.i++
	for {
		s.ws()
		switch s.peek() {
		case '}':
			s.i++
			s.depth--
			return nil
		case ',':
			s.i++
			s.ws()
		}
		if s.peek() != '"' {
			return &scanError{msg: errNotJSON}
		}
		raw, esc, ok := s.str()
		if !ok {
			return &scanError{msg: errNotJSON}
		}
		if esc || !utf8.Valid(raw) { // as encoding/json reads it: escapes undone, bad bytes U+FFFD
			var key string
			_ = json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &key) // valid JSON: cannot fail
			raw = []byte(key)
		}
		s.ws()
		if s.peek() != ':' {
			return &scanError{msg: errNotJSON}
		}
		s.i++
		s.ws()
		var elem reflect.Type
		if fs == nil {
			if seenKeys == nil {
				seenKeys = map[string]bool{}
			}
			if seenKeys[string(raw)] {
				return &scanError{msg: fmt.Sprintf("field %q given twice", raw)}
			}
			seenKeys[string(raw)], elem = true, t.Elem()
		} else {
			n, ok := fs.index[string(raw)] // no copy of the key
			switch {
			case !ok:
				return &scanError{msg: fmt.Sprintf("unknown field %q (names are case-sensitive)", raw)}
			case seenBits[n/64]&(1<<(n%64)) != 0:
				return &scanError{msg: fmt.Sprintf("field %q given twice", raw)}
			}
			seenBits[n/64] |= 1 << (n % 64)
			elem = fs.types[n]
		}
		if e := s.value(elem); e != nil {
			return e.at("." + string(raw))
		}
	}
}
