package httpapi

import (
	"fmt"

	"github.com/fencegate/fencegate/wire"
)

func issuedResponse(is wire.Issued) (wire.IssuedResponse, error) {
	if is.Grant == nil || is.Status == nil {
		return wire.IssuedResponse{}, fmt.Errorf("httpapi: registry returned no grant or status")
	}
	return wire.IssuedResponse{
		Grant:       string(is.Grant.Encode()),
		GrantProof:  is.GrantProof,
		Status:      string(is.Status.Encode()),
		StatusProof: is.StatusProof, ExpiresAfterMs: is.ExpiresAfterMs,
		GateProofs: is.GateProofs,
	}, nil
}
