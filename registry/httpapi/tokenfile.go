package httpapi

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/fencegate/fencegate/grant"
)

// Token file limits.
const (
	// BearerTokenBytesMin is the shortest accepted bearer token, 16 bytes,
	// so a development token is at least not guessable by hand.
	BearerTokenBytesMin = 16
	// BearerTokenBytesMax bounds a bearer token, 512 bytes.
	BearerTokenBytesMax = 512
	// TokenFileBytesMax bounds a token file, 1 MiB.
	TokenFileBytesMax = 1 << 20
)

// TokenAuth authenticates "Authorization: Bearer <token>" against a fixed
// table of tokens. It is meant for development; production uses mTLS.
// Tokens are compared in constant time over their SHA-256, and every entry
// is compared on every call, so neither the match position nor a token's
// length leaks through timing.
type TokenAuth struct {
	entries []tokenEntry
}

type tokenEntry struct {
	sum      [sha256.Size]byte
	identity string
}

// LoadTokenFile reads a token file; see ParseTokenFile for the format.
func LoadTokenFile(path string) (*TokenAuth, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("httpapi: token file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, TokenFileBytesMax+1))
	if err != nil {
		return nil, fmt.Errorf("httpapi: token file: %w", err)
	}
	if len(b) > TokenFileBytesMax {
		return nil, fmt.Errorf("httpapi: token file: larger than %d bytes", TokenFileBytesMax)
	}
	return ParseTokenFile(b)
}

// ParseTokenFile parses a token table in one of two forms, told apart by
// the first non-blank byte:
//   - JSON: an object mapping token to identity, {"<token>": "<identity>"};
//   - lines: "<token> <identity>" separated by spaces or tabs, one pair a
//     line; blank lines and lines starting with '#' are skipped.
//
// Parsing is strict: every token is BearerTokenBytesMin to
// BearerTokenBytesMax printable ASCII bytes without spaces, every identity
// passes grant.ValidateOwner, a token appears once, and an empty table is
// an error (it would let nobody in, which is surely a mistake).
func ParseTokenFile(b []byte) (*TokenAuth, error) {
	pairs, err := splitTokenFile(b)
	if err != nil {
		return nil, err
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("httpapi: token file: no tokens")
	}
	seen := map[string]bool{}
	t := &TokenAuth{}
	for _, p := range pairs {
		if err := validateBearer(p[0]); err != nil {
			return nil, fmt.Errorf("httpapi: token file: %s: token %w", p[2], err)
		}
		if err := grant.ValidateOwner(p[1]); err != nil {
			return nil, fmt.Errorf("httpapi: token file: %s: identity: %w", p[2], err)
		}
		if seen[p[0]] {
			return nil, fmt.Errorf("httpapi: token file: %s: duplicate token", p[2])
		}
		seen[p[0]] = true
		t.entries = append(t.entries, tokenEntry{sha256.Sum256([]byte(p[0])), p[1]})
	}
	return t, nil
}

// splitTokenFile returns (token, identity, where) triples.
func splitTokenFile(b []byte) ([][3]string, error) {
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return splitTokenJSON(trimmed)
	}
	var out [][3]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), TokenFileBytesMax)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("httpapi: token file: line %d: want \"<token> <identity>\", got %d fields", n, len(f))
		}
		out = append(out, [3]string{f[0], f[1], fmt.Sprintf("line %d", n)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("httpapi: token file: %w", err)
	}
	return out, nil
}

func splitTokenJSON(b []byte) ([][3]string, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	if _, err := d.Token(); err != nil { // the '{'
		return nil, fmt.Errorf("httpapi: token file: %w", err)
	}
	var out [][3]string
	for i := 1; d.More(); i++ {
		var tok, id string
		k, err := d.Token()
		if err == nil {
			tok, _ = k.(string)
			err = d.Decode(&id)
		}
		if err != nil {
			return nil, fmt.Errorf("httpapi: token file: entry %d: want \"token\": \"identity\": %v", i, err)
		}
		out = append(out, [3]string{tok, id, fmt.Sprintf("entry %d", i)})
	}
	if _, err := d.Token(); err != nil { // the '}'
		return nil, fmt.Errorf("httpapi: token file: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("httpapi: token file: trailing data after JSON object")
	}
	return out, nil
}

func validateBearer(tok string) error {
	if len(tok) < BearerTokenBytesMin || len(tok) > BearerTokenBytesMax {
		return fmt.Errorf("is %d bytes, want %d to %d", len(tok), BearerTokenBytesMin, BearerTokenBytesMax)
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("byte %d is not printable ASCII", i)
		}
	}
	return nil
}

// Authenticate implements Authenticator.
func (t *TokenAuth) Authenticate(r *http.Request) (string, error) {
	h := r.Header.Values("Authorization")
	if len(h) == 0 {
		return "", ErrNoCredentials
	}
	if len(h) > 1 {
		return "", fmt.Errorf("%w: more than one Authorization header", ErrBadCredentials)
	}
	scheme, tok, ok := strings.Cut(h[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", fmt.Errorf("%w: want Authorization: Bearer <token>", ErrBadCredentials)
	}
	sum := sha256.Sum256([]byte(tok))
	id, found := "", 0
	for _, e := range t.entries {
		eq := subtle.ConstantTimeCompare(sum[:], e.sum[:])
		if eq == 1 {
			id = e.identity
		}
		found |= eq
	}
	if found == 0 {
		return "", fmt.Errorf("%w: unknown bearer token", ErrBadCredentials)
	}
	return id, nil
}
