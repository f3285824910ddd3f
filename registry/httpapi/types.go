package httpapi

import (
	"fmt"

	"github.com/fencegate/fencegate/wire"
)

func issuedResponse(is wire.Issued) (wire.IssuedResponse, error) {
	// A fresh grant carrying its own HELD statement comes without a
	// status (status and statusProof ""); every other answer has one.
	if is.Grant == nil || is.Status == nil && !is.Grant.HeldStatement() {
		return wire.IssuedResponse{}, fmt.Errorf("httpapi: registry returned no grant or status")
	}
	out := wire.IssuedResponse{Grant: string(is.Grant.Encode()), GrantProof: is.GrantProof, StatusProof: is.StatusProof,
		ExpiresAfterMs: is.ExpiresAfterMs, GateProofs: is.GateProofs}
	if is.Status != nil {
		out.Status = string(is.Status.Encode())
	}
	return out, nil
}
