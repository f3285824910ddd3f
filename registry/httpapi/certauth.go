package httpapi

import (
	"crypto/x509"
	"fmt"
	"net/http"

	"github.com/fencegate/fencegate/grant"
)

// CertAuth takes the identity from the client certificate that the TLS
// layer verified (tls.Config.ClientCAs with VerifyClientCertIfGiven or
// RequireAndVerifyClientCert). Unverified peer certificates are never
// trusted: without a verified chain there are no credentials.
//
// The identity is the certificate's spiffe:// URI SAN when it has exactly
// one, else its subject CN; either must pass grant.ValidateOwner. A
// certificate with two or more SPIFFE IDs is refused rather than guessed at.
type CertAuth struct{}

// Authenticate implements Authenticator.
func (CertAuth) Authenticate(r *http.Request) (string, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return "", ErrNoCredentials
	}
	return CertIdentity(r.TLS.VerifiedChains[0][0])
}

// CertIdentity returns the workload identity of a verified leaf
// certificate: its one spiffe:// URI SAN, else its CN.
func CertIdentity(c *x509.Certificate) (string, error) {
	var spiffe []string
	for _, u := range c.URIs {
		if u.Scheme == "spiffe" {
			spiffe = append(spiffe, u.String())
		}
	}
	id := c.Subject.CommonName
	switch {
	case len(spiffe) > 1:
		return "", fmt.Errorf("%w: client certificate has %d SPIFFE IDs, want one", ErrBadCredentials, len(spiffe))
	case len(spiffe) == 1:
		id = spiffe[0]
	}
	if id == "" {
		return "", fmt.Errorf("%w: client certificate has neither a SPIFFE URI SAN nor a CN", ErrBadCredentials)
	}
	if err := grant.ValidateOwner(id); err != nil {
		return "", fmt.Errorf("%w: client certificate identity %q: %v", ErrBadCredentials, id, err)
	}
	return id, nil
}
