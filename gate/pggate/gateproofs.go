package pggate

import (
	"strings"

	"github.com/fencegate/fencegate/gate"
)

// EffectiveProofs is the rule by which fencegate.apply (schema version 3)
// chooses the proofs it checks: the first of m.GateProofs whose grant
// proof is a "mac:" proof under a key ID enrolled names (whatever that
// key's state: a retired key's proof is then refused, as revocation
// wants), else m's own GrantProof and StatusProof. The database holds
// only its own keys, so another gate's pair is never chosen; an
// envelope without one falls back to the registry's proofs, which an
// Ed25519 registry makes "sig:" and the database refuses as BAD_PROOF.
// The SQL (fencegate.effective_proofs) implements it; this is its
// statement in Go, which the differential fuzz target holds it to.
func EffectiveProofs(m *gate.Mutation, enrolled func(keyID string) bool) (grantProof, statusProof string) {
	for _, p := range m.GateProofs {
		parts := strings.SplitN(p.GrantProof, ":", 3)
		if parts[0] == "mac" && len(parts) > 1 && enrolled(parts[1]) {
			return p.GrantProof, p.StatusProof
		}
	}
	return m.GrantProof, m.StatusProof
}
