package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/fencegate/fencegate/grant"
)

// ErrNoCredentials: the request carries no credential of the kind an
// Authenticator understands. A Chain moves on to its next Authenticator;
// if none finds one, the call is refused with 401.
var ErrNoCredentials = errors.New("httpapi: no credentials")

// ErrBadCredentials: the request carries a credential that does not
// authenticate (unknown token, certificate without a usable identity). It
// is refused with 401; a Chain does not try other methods after it.
var ErrBadCredentials = errors.New("httpapi: bad credentials")

// Authenticator yields the caller's workload identity (a grant owner, valid
// under grant.ValidateOwner) from a request. It returns an error wrapping
// ErrNoCredentials when the request carries none of its kind, and one
// wrapping ErrBadCredentials when what it carries does not authenticate.
// Implementations must be safe for concurrent use.
type Authenticator interface {
	Authenticate(r *http.Request) (string, error)
}

// Chain tries each Authenticator in order: the first identity wins, the
// first error other than ErrNoCredentials ends the search (a bad token is
// never excused by the absence of a certificate, nor the reverse).
type Chain []Authenticator

// Authenticate implements Authenticator.
func (c Chain) Authenticate(r *http.Request) (string, error) {
	for _, a := range c {
		id, err := a.Authenticate(r)
		if err == nil {
			return id, nil
		}
		if !errors.Is(err, ErrNoCredentials) {
			return "", err
		}
	}
	return "", fmt.Errorf("%w: send a client certificate or an Authorization: Bearer token", ErrNoCredentials)
}

// Admins is the set of identities allowed to call /v1/admin/... endpoints.
type Admins []string

// Has reports whether id is an admin identity.
func (a Admins) Has(id string) bool { return slices.Contains(a, id) }

// ValidateAdmins checks that every admin identity is a valid owner, so a
// typo in --admin fails at start rather than never matching.
func ValidateAdmins(ids []string) error {
	for _, id := range ids {
		if err := grant.ValidateOwner(id); err != nil {
			return fmt.Errorf("httpapi: admin identity %q: %w", id, err)
		}
	}
	return nil
}

type identityKey struct{}

// withIdentity returns ctx carrying the authenticated identity.
func withIdentity(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the authenticated identity that the server's
// middleware put in ctx, or "" outside an authenticated request.
func IdentityFrom(ctx context.Context) string {
	id, _ := ctx.Value(identityKey{}).(string)
	return id
}

// NewAuthenticator builds the server's Authenticator: client certificates
// when clientCerts (TLS with a client CA is configured), bearer tokens from
// tokenFile when it is not "", certificates first. With neither it fails:
// no identity, no service.
func NewAuthenticator(tokenFile string, clientCerts bool) (Authenticator, error) {
	var chain Chain
	if clientCerts {
		chain = append(chain, CertAuth{})
	}
	if tokenFile != "" {
		t, err := LoadTokenFile(tokenFile)
		if err != nil {
			return nil, err
		}
		chain = append(chain, t)
	}
	if len(chain) == 0 {
		return nil, errors.New("httpapi: no identity source: configure client certificates or a token file")
	}
	return chain, nil
}
