package grant

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Named limits on identifiers, in bytes. All identifiers are ASCII.
const (
	// ResourceBytesMax bounds a canonical resource ID.
	ResourceBytesMax = 256
	// OwnerBytesMax bounds a workload identity (SPIFFE ID or plain name).
	OwnerBytesMax = 256
	// PlainOwnerBytesMax bounds a plain-name owner.
	PlainOwnerBytesMax = 128
	// TokenBytesMax bounds request IDs, lease IDs and operation IDs.
	TokenBytesMax = 128
	// OperationClassBytesMax bounds an operation class.
	OperationClassBytesMax = 64
	// KeyIDBytesMax bounds a trust-bundle key ID.
	KeyIDBytesMax = 64
)

// charAt names the character of s that starts at byte i as the user typed
// it: 'é' rather than its first byte read as Latin-1 ('Ã'), and the byte
// in hex when s is not valid UTF-8 there.
func charAt(s string, i int) string {
	r, n := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && n <= 1 {
		return fmt.Sprintf("byte 0x%02x (not UTF-8)", s[i])
	}
	return fmt.Sprintf("character %q", r)
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
func isAlnum(c byte) bool      { return isLowerAlnum(c) || 'A' <= c && c <= 'Z' }

// ValidateResource reports whether s is a canonical resource ID: 1 to
// ResourceBytesMax bytes of segments joined by '/', each segment made of
// lowercase ASCII letters, digits, '-', '_' and '.', with no empty segment
// (so no leading, trailing or doubled '/') and no "." or ".." segment.
// Upper case is rejected rather than folded, so one resource has exactly one
// name. Example: "invoice-batch/2026-07-19".
func ValidateResource(s string) error {
	if s == "" {
		return errors.New("empty resource ID")
	}
	if len(s) > ResourceBytesMax {
		return fmt.Errorf("resource ID is %d bytes, limit %d", len(s), ResourceBytesMax)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isLowerAlnum(c) || c == '-' || c == '_' || c == '.' || c == '/') {
			if 'A' <= c && c <= 'Z' {
				return fmt.Errorf("resource ID not canonical: upper-case %q at byte %d (use lower case)", c, i)
			}
			return fmt.Errorf("resource ID not canonical: %s at byte %d not allowed", charAt(s, i), i)
		}
	}
	return checkSegments("resource ID", s)
}

// checkSegments rejects empty, "." and ".." segments of a '/'-joined path.
func checkSegments(what, s string) error {
	for i := 1; ; i++ {
		seg, rest, more := strings.Cut(s, "/")
		switch seg {
		case "":
			return fmt.Errorf("%s not canonical: empty segment %d", what, i)
		case ".", "..":
			return fmt.Errorf("%s not canonical: dot segment %q", what, seg)
		}
		if !more {
			return nil
		}
		s = rest
	}
}

// ValidateOwner reports whether s is a workload identity, in one of two
// forms:
//   - a SPIFFE ID "spiffe://<trust-domain>/<path>": the trust domain is
//     lowercase letters, digits, '.', '-' and '_'; the path is one or more
//     segments of letters, digits, '.', '-' and '_', with no empty, "." or
//     ".." segment; at most OwnerBytesMax bytes in all;
//   - a plain name: 1 to PlainOwnerBytesMax bytes of letters, digits, '.',
//     '-' and '_', starting with a letter or digit (e.g. "worker-settlement-7").
func ValidateOwner(s string) error {
	if s == "" {
		return errors.New("empty owner")
	}
	if len(s) > OwnerBytesMax {
		return fmt.Errorf("owner is %d bytes, limit %d", len(s), OwnerBytesMax)
	}
	if rest, ok := strings.CutPrefix(s, "spiffe://"); ok {
		return validateSPIFFE(rest)
	}
	if strings.Contains(s, ":") || strings.Contains(s, "/") {
		return fmt.Errorf("owner %q is neither a spiffe:// ID nor a plain name", s)
	}
	if len(s) > PlainOwnerBytesMax {
		return fmt.Errorf("plain owner name is %d bytes, limit %d", len(s), PlainOwnerBytesMax)
	}
	if !isAlnum(s[0]) {
		return errors.New("plain owner name must start with a letter or digit")
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(isAlnum(c) || c == '.' || c == '-' || c == '_') {
			return fmt.Errorf("owner: %s at byte %d not allowed", charAt(s, i), i)
		}
	}
	return nil
}

func validateSPIFFE(rest string) error {
	td, path, ok := strings.Cut(rest, "/")
	if td == "" {
		return errors.New("owner: SPIFFE ID has an empty trust domain")
	}
	for i := 0; i < len(td); i++ {
		if c := td[i]; !(isLowerAlnum(c) || c == '.' || c == '-' || c == '_') {
			return fmt.Errorf("owner: SPIFFE trust domain: %s not allowed (lowercase letters, digits, '.', '-', '_')", charAt(td, i))
		}
	}
	if !ok || path == "" {
		return errors.New("owner: SPIFFE ID has no workload path")
	}
	for i := 0; i < len(path); i++ {
		if c := path[i]; !(isAlnum(c) || c == '.' || c == '-' || c == '_' || c == '/') {
			return fmt.Errorf("owner: SPIFFE path: %s not allowed", charAt(path, i))
		}
	}
	return checkSegments("owner SPIFFE path", path)
}

// ValidateToken reports whether s is a valid request ID, lease ID or
// operation ID: 1 to TokenBytesMax bytes of letters, digits, '.', '-', '_'
// and ':'.
func ValidateToken(s string) error { return validateCharset(s, TokenBytesMax, true, ":") }

// ValidateOperationID is ValidateToken, named for its use with OperationRoot.
func ValidateOperationID(s string) error { return ValidateToken(s) }

// ValidateOperationClass reports whether s is 1 to OperationClassBytesMax
// bytes of lowercase letters, digits, '.', '-' and '_' (e.g. "settle").
func ValidateOperationClass(s string) error {
	return validateCharset(s, OperationClassBytesMax, false, "")
}

// ValidateKeyID reports whether s is 1 to KeyIDBytesMax bytes of letters,
// digits, '.', '-' and '_'. A key ID never contains ':', which separates it
// inside a proof.
func ValidateKeyID(s string) error { return validateCharset(s, KeyIDBytesMax, true, "") }

func validateCharset(s string, max int, upper bool, extra string) error {
	if s == "" {
		return errors.New("empty")
	}
	if len(s) > max {
		return fmt.Errorf("%d bytes, limit %d", len(s), max)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := isLowerAlnum(c) || c == '.' || c == '-' || c == '_' ||
			upper && 'A' <= c && c <= 'Z' || strings.IndexByte(extra, c) >= 0
		if !ok {
			return fmt.Errorf("%s at byte %d not allowed", charAt(s, i), i)
		}
	}
	return nil
}
