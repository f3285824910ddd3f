package grant

import "crypto/sha256"

// SchemaGateCommand is the domain separator of a registry's command to a
// gate (gate/report: a resume an operator confirmed on the dashboard). A
// command proof never verifies as a grant, status or bundle proof, nor
// the reverse.
const SchemaGateCommand = "gateCommand.v1"

// SignCommand returns k's proof over body, the command's exact bytes,
// under SchemaGateCommand. A gate checks it with
// Verifier.VerifyDigest(SchemaGateCommand, CommandDigest(body), epoch,
// proof), so the bundle's key states and epoch revocation apply to
// commands as they do to grants.
func SignCommand(body []byte, k *SigningKey) string {
	return k.signDigest(SchemaGateCommand, CommandDigest(body)).String()
}

// CommandDigest is the digest a command proof covers: SHA-256 of body.
func CommandDigest(body []byte) Digest { return sha256.Sum256(body) }
