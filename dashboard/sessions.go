package dashboard

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Session limits.
const (
	// SessionTTLMs is how long a login lasts, 12 h (a working day). It is
	// not extended by use: after it the browser logs in again.
	SessionTTLMs = 12 * 60 * 60 * 1000
	// SessionsMax bounds the sessions kept, 1024. Past it a login drops
	// the session that would expire first (its browser logs in again):
	// only an identity allowed to see the page can log in, so this is a
	// bound on memory, not a defence.
	SessionsMax = 1024
	// sessionIDBytes is a session ID's randomness, 32 bytes.
	sessionIDBytes = 32
)

// errSessionEnded: a browser's cookie names no live session (it expired,
// was logged out, or serve restarted).
var errSessionEnded = errors.New("dashboard: session ended (expired, logged out, or serve restarted): log in again")

// session is one browser's login: the identity it proved at /ui/login,
// and when the login ends.
type session struct {
	identity  string
	expiresAt time.Time
}

// sessionStore keeps the logins of this serve process, in memory.
// It holds each session under the SHA-256 of its ID, so the IDs browsers
// present are nowhere in serve's memory between requests, and a lookup's
// timing depends on the hash, not on how much of an ID an attacker
// guessed. Safe for concurrent use.
type sessionStore struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]session
}

func newSessionStore() *sessionStore {
	return &sessionStore{m: map[[sha256.Size]byte]session{}}
}

// create starts a session for identity at now and returns its ID, the
// cookie's value: sessionIDBytes from crypto/rand, base64url.
func (s *sessionStore) create(identity string, now time.Time) (string, error) {
	b := make([]byte, sessionIDBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("dashboard: session ID: %w", err)
	}
	id := base64.RawURLEncoding.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	if len(s.m) >= SessionsMax {
		s.dropFirstToExpire()
	}
	s.m[sha256.Sum256([]byte(id))] = session{identity: identity, expiresAt: now.Add(SessionTTLMs * time.Millisecond)}
	return id, nil
}

// identity returns the identity of the live session id at now.
func (s *sessionStore) identity(id string, now time.Time) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := sha256.Sum256([]byte(id))
	se, ok := s.m[k]
	if !ok || !now.Before(se.expiresAt) {
		delete(s.m, k)
		return "", errSessionEnded
	}
	return se.identity, nil
}

// end revokes session id (logout); an unknown ID is no error.
func (s *sessionStore) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sha256.Sum256([]byte(id)))
}

// expire drops the sessions over at now.
func (s *sessionStore) expire(now time.Time) {
	for k, se := range s.m {
		if !now.Before(se.expiresAt) {
			delete(s.m, k)
		}
	}
}

func (s *sessionStore) dropFirstToExpire() {
	var first [sha256.Size]byte
	var at time.Time
	for k, se := range s.m {
		if at.IsZero() || se.expiresAt.Before(at) {
			first, at = k, se.expiresAt
		}
	}
	delete(s.m, first)
}
