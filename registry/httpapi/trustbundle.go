package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// TrustBundlePath serves the registry's trust bundle, signed: GET, no
// identity needed (it holds public keys and key states only, and its
// proof, not the channel, is what a gate trusts).
const TrustBundlePath = "/v1/trust-bundle"

// TrustBundleTimeoutMs bounds building the answer, 2s.
const TrustBundleTimeoutMs = 2000

// BundlePublisher returns the bundle to publish, signed
// (grant.SignBundle). serve reads its bundle file on every call, so an
// edit with `fencegate keys bundle` is published at once.
type BundlePublisher func(ctx context.Context) (grant.SignedBundle, error)

// FileBundlePublisher publishes the bundle file at path signed by key.
func FileBundlePublisher(path string, key *grant.SigningKey) BundlePublisher {
	return func(context.Context) (grant.SignedBundle, error) {
		b, err := grant.LoadBundle(path)
		if err != nil {
			return grant.SignedBundle{}, err
		}
		return grant.SignBundle(b.File(), key)
	}
}

func (s *Server) trustBundle(w http.ResponseWriter, r *http.Request) {
	if s.cfg.TrustBundle == nil {
		writeJSON(w, http.StatusNotFound, wire.ErrorBody{Code: wire.CodeNotFound, Message: "httpapi: this server publishes no trust bundle"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), TrustBundleTimeoutMs*time.Millisecond)
	defer cancel()
	sb, err := s.cfg.TrustBundle(ctx)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, wire.ErrorBody{Code: wire.CodeInternal, Message: "httpapi: trust bundle: " + err.Error()})
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, http.StatusOK, sb)
}
