package grant

import (
	"fmt"
	"slices"
)

// GateProofsMax bounds how many per-gate proof pairs one answer or
// envelope carries: a resource is protected by one gate, rarely a few
// (a database and its successor during a move); eight is room to spare.
const GateProofsMax = 8

// GateProof is one gate's own proofs of a grant and its status: HMAC-SHA256
// under the key the registry enrolled for that gate alone ("mac:<keyId>:…",
// the key ID naming the gate's key), carried beside the registry's
// Ed25519 proofs. A gate that holds only its own secret checks these, so a
// database that leaks its key can make proofs for itself and for no other
// gate. Gates that verify Ed25519 ignore them.
type GateProof struct {
	// Gate names the gate, as the registry's gate-keys file does (key ID
	// rules, ValidateKeyID); informative: a gate picks its pair by the key
	// ID in the proof, never by this name.
	Gate string `json:"gate"`
	// GrantProof is the gate's MAC over the grant, 1..256 bytes.
	GrantProof string `json:"grantProof"`
	// StatusProof is the gate's MAC over the status statement that
	// travels with the grant, or "" when none does.
	StatusProof string `json:"statusProof,omitempty"`
}

// ValidateGateProofs checks a list's shape, not its MACs: at most
// GateProofsMax entries, each gate named once by a valid name, each
// grant proof 1..256 bytes, each status proof at most 256 bytes and
// present exactly when withStatus.
func ValidateGateProofs(ps []GateProof, withStatus bool) error {
	if len(ps) > GateProofsMax {
		return fmt.Errorf("%d entries, limit %d", len(ps), GateProofsMax)
	}
	seen := make([]string, 0, len(ps))
	for i, p := range ps {
		if err := ValidateKeyID(p.Gate); err != nil {
			return fmt.Errorf("[%d]: gate: %v", i, err)
		}
		if slices.Contains(seen, p.Gate) {
			return fmt.Errorf("[%d]: gate %s named twice", i, p.Gate)
		}
		seen = append(seen, p.Gate)
		if p.GrantProof == "" || len(p.GrantProof) > proofTextBytesMax {
			return fmt.Errorf("[%d]: grantProof: %d bytes, want 1..%d", i, len(p.GrantProof), proofTextBytesMax)
		}
		if len(p.StatusProof) > proofTextBytesMax {
			return fmt.Errorf("[%d]: statusProof: %d bytes, limit %d", i, len(p.StatusProof), proofTextBytesMax)
		}
		if (p.StatusProof != "") != withStatus {
			return fmt.Errorf("[%d]: statusProof must be present exactly when a status is", i)
		}
	}
	return nil
}

// proofTextBytesMax is ParseProof's bound on a proof text.
const proofTextBytesMax = 256
