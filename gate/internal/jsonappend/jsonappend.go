// Package jsonappend writes JSON by hand for the forms encoded on every
// fenced write — gate.Receipt's wire form, the key-value adapters' stored
// state and manifests — with exactly encoding/json's bytes and without
// its reflection. Decoding stays encoding/json's (strict, through
// internal/strictjson). It imports nothing of the module, so package gate
// and the adapters' internals can both use it.
package jsonappend

import (
	"encoding/json"
	"strconv"
)

// String appends s as json.Marshal quotes it: directly when every byte
// is printable ASCII that JSON leaves alone (digests, instants, modes,
// resource names), else through json.Marshal.
func String(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always marshals
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// Name appends sep ('{' to open an object, ',' between members) and the
// member name with its colon; name must need no escaping.
func Name(dst []byte, sep byte, name string) []byte {
	dst = append(dst, sep, '"')
	dst = append(dst, name...)
	return append(dst, '"', ':')
}

// Str appends the member name: value, value a string.
func Str(dst []byte, sep byte, name, value string) []byte {
	return String(Name(dst, sep, name), value)
}

// Uint appends the member name: v.
func Uint(dst []byte, sep byte, name string, v uint64) []byte {
	return strconv.AppendUint(Name(dst, sep, name), v, 10)
}

// Bool appends the member name: v.
func Bool(dst []byte, sep byte, name string, v bool) []byte {
	return strconv.AppendBool(Name(dst, sep, name), v)
}
