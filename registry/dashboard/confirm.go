package dashboard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ConfirmTTLMs is how long a confirmation page's token may be used, 5 min.
const ConfirmTTLMs = 5 * 60 * 1000

// NoteBytesMax bounds an action's note, 1 KiB (as the API's).
const NoteBytesMax = 1024

// Action kinds.
const (
	KindFloor  = "raise-floor"
	KindRevoke = "revoke-epochs"
	KindResume = "gate-resume"
)

// request is one action as an admin asks for it.
type request struct {
	Kind     string
	Gate     string // KindResume
	Resource string // KindFloor, KindResume
	Value    uint64 // the fence above which (floor), the epoch below which (revoke), the floor (resume)
	Note     string
}

// Confirmation is what the operator must type to confirm: the resource
// name, or for a revocation the epoch.
func (q request) Confirmation() string {
	if q.Kind == KindRevoke {
		return strconv.FormatUint(q.Value, 10)
	}
	return q.Resource
}

// fields is the request in a fixed order, for the token.
func (q request) fields() string {
	return strings.Join([]string{q.Kind, q.Gate, q.Resource, strconv.FormatUint(q.Value, 10), q.Note}, "\x00")
}

// token binds a confirmation to the admin, the request and an expiry:
// base64url(expiry ms) "." base64url(HMAC-SHA256).
func (d *Dashboard) token(admin string, q request, expiresMs int64) string {
	exp := strconv.FormatInt(expiresMs, 10)
	return exp + "." + base64.RawURLEncoding.EncodeToString(d.mac(admin, q, exp))
}

func (d *Dashboard) mac(admin string, q request, exp string) []byte {
	m := hmac.New(sha256.New, d.tokenKey)
	fmt.Fprintf(m, "fencegate/dashboard/confirm/v1\x00%s\x00%s\x00%s", admin, exp, q.fields())
	return m.Sum(nil)
}

var errToken = errors.New("dashboard: confirmation token invalid or expired; confirm again")

// checkToken accepts tok for admin and q at nowMs.
func (d *Dashboard) checkToken(tok, admin string, q request, nowMs int64) error {
	exp, sum, ok := strings.Cut(tok, ".")
	if !ok {
		return errToken
	}
	expMs, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || nowMs > expMs || expMs-nowMs > ConfirmTTLMs {
		return errToken
	}
	got, err := base64.RawURLEncoding.DecodeString(sum)
	if err != nil || !hmac.Equal(got, d.mac(admin, q, exp)) {
		return errToken
	}
	return nil
}

// checkNote wants a note: printable UTF-8, at most NoteBytesMax bytes.
func checkNote(note string) error {
	switch {
	case note == "":
		return errors.New("a note is required: say why (an incident, a ticket)")
	case len(note) > NoteBytesMax || !utf8.ValidString(note):
		return fmt.Errorf("note: not UTF-8 or over %d bytes", NoteBytesMax)
	}
	for _, r := range note {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("note: control character %U", r)
		}
	}
	return nil
}
