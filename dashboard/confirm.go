package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
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
	KindBreak  = "break"
)

// request is one action as an operator asks for it.
type request struct {
	Kind     string
	Gate     string // KindResume
	Resource string // KindFloor, KindResume, KindBreak
	Lease    string // KindBreak: the lease the operator saw and means to end
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
	return strings.Join([]string{q.Kind, q.Gate, q.Resource, q.Lease, strconv.FormatUint(q.Value, 10), q.Note}, "\x00")
}

// confirmNonceBytes makes every confirmation's token its own, 12 bytes:
// two confirmations of one action in one millisecond are two tokens,
// each good for one action.
const confirmNonceBytes = 12

// token binds a confirmation to the operator (an admin, or an identity
// the policy lets break the resource), the request and an expiry:
// expiry ms "." base64url(random nonce) "." base64url(HMAC-SHA256 over
// the operator, the expiry, the nonce and the request).
func (d *Dashboard) token(operator string, q request, expiresMs int64) string {
	exp := strconv.FormatInt(expiresMs, 10)
	b := make([]byte, confirmNonceBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics instead)
	nonce := base64.RawURLEncoding.EncodeToString(b)
	return exp + "." + nonce + "." + base64.RawURLEncoding.EncodeToString(d.mac(operator, q, exp, nonce))
}

func (d *Dashboard) mac(operator string, q request, exp, nonce string) []byte {
	m := hmac.New(sha256.New, d.tokenKey)
	fmt.Fprintf(m, "fencegate/dashboard/confirm/v3\x00%s\x00%s\x00%s\x00%s", operator, exp, nonce, q.fields())
	return m.Sum(nil)
}

var errToken = errors.New("dashboard: confirmation token invalid or expired; confirm again")

// checkToken accepts tok for operator and q at nowMs, and returns when it
// expires. It does not say whether tok was used: see usedTokens.
func (d *Dashboard) checkToken(tok, operator string, q request, nowMs int64) (expMs int64, err error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return 0, errToken
	}
	exp, nonce, sum := parts[0], parts[1], parts[2]
	expMs, err = strconv.ParseInt(exp, 10, 64)
	if err != nil || nowMs > expMs || expMs-nowMs > ConfirmTTLMs {
		return 0, errToken
	}
	got, err := base64.RawURLEncoding.DecodeString(sum)
	if err != nil || !hmac.Equal(got, d.mac(operator, q, exp, nonce)) {
		return 0, errToken
	}
	return expMs, nil
}

// ConfirmationsUsedMax bounds the used confirmation tokens remembered
// until they expire, 4096: far above what admins confirm in ConfirmTTLMs.
// Past it an action is refused until some expire, never done twice.
const ConfirmationsUsedMax = 4096

// Outcomes of an action refused for its confirmation, in its audit line.
const (
	outcomeConfirmationUsed  = "CONFIRMATION_USED"  // a replayed confirmation: nothing done again
	outcomeConfirmationsFull = "CONFIRMATIONS_FULL" // ConfirmationsUsedMax reached: nothing done
)

// errTokenUsed: the confirmation was already acted on.
var errTokenUsed = errors.New("dashboard: this confirmation was already used")

// errTooManyConfirmations: ConfirmationsUsedMax tokens are remembered.
var errTooManyConfirmations = errors.New("dashboard: too many actions confirmed in the last 5 minutes; try again shortly")

// usedTokens makes confirmation tokens single-use: a token is spent when
// its action is done and remembered until it expires, after which
// checkToken refuses it anyway. Safe for concurrent use.
type usedTokens struct {
	mu sync.Mutex
	m  map[string]usedToken // by token
}

// usedToken is when a token was spent and on which action.
type usedToken struct {
	expMs, atMs int64
	action      string // the action's ID, "" while it is being done
}

func newUsedTokens() *usedTokens { return &usedTokens{m: map[string]usedToken{}} }

// spend marks tok (valid until expMs) used at nowMs. If it already was,
// it returns errTokenUsed with when and on which action.
func (u *usedTokens) spend(tok string, expMs, nowMs int64) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := u.usedLocked(tok, nowMs); err != nil {
		return err
	}
	if len(u.m) >= ConfirmationsUsedMax {
		return errTooManyConfirmations
	}
	u.m[tok] = usedToken{expMs: expMs, atMs: nowMs}
	return nil
}

// used returns errTokenUsed, with when and on which action, if tok was
// spent; nil otherwise. It spends nothing: a replay is told apart before
// the action's state is checked again (after a break, the lock has
// changed hands, and that would hide the replay).
func (u *usedTokens) used(tok string, nowMs int64) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.usedLocked(tok, nowMs)
}

func (u *usedTokens) usedLocked(tok string, nowMs int64) error {
	for k, e := range u.m {
		if e.expMs < nowMs {
			delete(u.m, k)
		}
	}
	if e, ok := u.m[tok]; ok {
		return fmt.Errorf("%w %s ago (action %s); it stands for one action, which was done then: nothing was done again. Start the action anew to repeat it",
			errTokenUsed, ms(nowMs-e.atMs), e.action)
	}
	return nil
}

// done names the action a spent token confirmed.
func (u *usedTokens) done(tok, action string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if e, ok := u.m[tok]; ok {
		e.action = action
		u.m[tok] = e
	}
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
