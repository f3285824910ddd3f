package strictjson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// The fast check. Decode first asks json.Valid whether b is one JSON
// value; only then does scanValue walk b's bytes, so it may assume valid
// JSON (every string closed, every bracket matched) and never has to
// report a syntax error. It checks exactly what checkValue checks, with
// no token values, no path strings unless there is an error, and a bit
// per struct field instead of a set of names. Invalid JSON takes the
// token walk (checkValue), whose errors are encoding/json's.

// fieldSet is a struct's JSON names and their order (the bit a field
// takes in an object's seen mask).
type fieldSet struct {
	index map[string]int
	types []reflect.Type
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

// scanner walks valid JSON.
type scanner struct {
	b []byte
	i int
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
func (s *scanner) str() ([]byte, bool) {
	start, esc := s.i+1, false
	for s.i = start; s.b[s.i] != '"'; s.i++ {
		if s.b[s.i] == '\\' {
			esc = true
			s.i++
		}
	}
	s.i++
	return s.b[start : s.i-1], esc
}

// skip passes over one value at s.i.
func (s *scanner) skip() {
	switch s.b[s.i] {
	case '"':
		s.str()
	case '{', '[':
		depth := 0
		for {
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
	c := s.b[s.i]
	switch {
	case t == rawMessage || t.Kind() == reflect.Interface || (c != '{' && c != '['):
		s.skip()
		return nil
	case c == '{' && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map):
		return s.object(t)
	case c == '[' && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		s.i++
		for n := 0; ; n++ {
			s.ws()
			if s.b[s.i] == ']' {
				s.i++
				return nil
			}
			if s.b[s.i] == ',' {
				s.i++
				s.ws()
			}
			if e := s.value(t.Elem()); e != nil {
				return e.at(fmt.Sprintf("[%d]", n))
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
	}
	s.i++
	for {
		s.ws()
		switch s.b[s.i] {
		case '}':
			s.i++
			return nil
		case ',':
			s.i++
			s.ws()
		}
		raw, esc := s.str()
		if esc || !utf8.Valid(raw) { // as encoding/json reads it: escapes undone, bad bytes U+FFFD
			var key string
			_ = json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &key) // valid JSON: cannot fail
			raw = []byte(key)
		}
		s.ws()
		s.i++ // ':'
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
