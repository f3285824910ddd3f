package report

import (
	"encoding/json"

	"github.com/fencegate/fencegate/grant"
)

// Sign encodes cmd (its Schema set to grant.SchemaGateCommand) and signs
// the bytes with the registry's key k. It refuses a command ParseCommand
// would refuse.
func Sign(cmd Command, k *grant.SigningKey) (SignedCommand, error) {
	cmd.Schema = grant.SchemaGateCommand
	b, err := json.Marshal(cmd)
	if err != nil {
		return SignedCommand{}, err
	}
	if _, err := ParseCommand(string(b)); err != nil {
		return SignedCommand{}, err
	}
	return SignedCommand{Command: string(b), Proof: grant.SignCommand(b, k)}, nil
}
