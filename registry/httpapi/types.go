package httpapi

import (
	"fmt"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
)

// The request and response bodies of /v1. Field names are the wire names;
// api/openapi.yaml describes the same shapes. Requests are decoded strictly
// (DecodeRequest); a field's rule is the registry's (a bad value is
// INVALID, 400), the JSON shape is this package's (a bad shape is
// BAD_REQUEST, 400).

// AcquireRequest is POST /v1/acquire. The owner is the caller's identity,
// never a field.
type AcquireRequest struct {
	Resource       string `json:"resource"`
	OperationID    string `json:"operationId"`
	OperationClass string `json:"operationClass"`
	RequestID      string `json:"requestId"`        // idempotency key: retry a lost response with the same one
	TTLMs          uint64 `json:"ttlMs,omitempty"`  // optional, 0: the registry's default
	WaitMs         uint64 `json:"waitMs,omitempty"` // optional, 0: fail at once with BUSY
}

// LeaseRequest is POST /v1/renew and POST /v1/release.
type LeaseRequest struct {
	Resource string `json:"resource"`
	Lease    string `json:"lease"`
}

// StatusRequest is POST /v1/status: the grant's canonical lockGrant.v1
// text, as the registry issued it.
type StatusRequest struct {
	Grant string `json:"grant"`
}

// IssuedResponse carries a grant and its status as their canonical text,
// byte for byte what the registry signed, with the proofs. The proofs are
// empty when the grant's issuer epoch is revoked (Status then says
// REVOKED): no proof is ever issued for a revoked epoch.
type IssuedResponse struct {
	Grant       string `json:"grant"`       // lockGrant.v1 text
	GrantProof  string `json:"grantProof"`  // sig:<keyId>:<b64> or mac:…, or ""
	Status      string `json:"status"`      // grantStatus.v1 text
	StatusProof string `json:"statusProof"` // or ""
	// ExpiresAfterMs, in a HELD answer, is how long after the request
	// reached the registry the lease expires (registry.Issued.ExpiresAfterMs);
	// omitted when not known.
	ExpiresAfterMs int64 `json:"expiresAfterMs,omitempty"`
}

// ReleaseResponse is the answer to a successful POST /v1/release.
type ReleaseResponse struct {
	Resource string      `json:"resource"`
	Lease    string      `json:"lease"`
	State    grant.State `json:"state"` // always RELEASED
}

// RevokeEpochsRequest is POST /v1/admin/revoke-epochs.
type RevokeEpochsRequest struct {
	Below uint64 `json:"below"` // revoke every issuer epoch below this; raise only
	Note  string `json:"note,omitempty"`
}

// RevokeEpochsResponse reports the revoked line now in force.
type RevokeEpochsResponse struct {
	RevokedBelowEpoch uint64 `json:"revokedBelowEpoch"`
}

// PolicyRequest is POST /v1/admin/policy.
type PolicyRequest struct {
	Resource   string `json:"resource"`
	Generation uint64 `json:"generation"` // raise only
	Note       string `json:"note,omitempty"`
}

// FloorRequest is POST /v1/admin/floor.
type FloorRequest struct {
	Resource string `json:"resource"`
	Fence    uint64 `json:"fence"` // every later fence exceeds it; raise only
	// Note says why, for the audit log; optional, at most NoteBytesMax.
	Note string `json:"note,omitempty"`
}

// ResourceRequest is POST /v1/admin/resource.
type ResourceRequest struct {
	Resource string `json:"resource"`
}

// ResourceInfo is an operator's view of one resource
// (registry.ResourceInfo on the wire).
type ResourceInfo struct {
	Resource         string `json:"resource"`
	HighestFence     uint64 `json:"highestFence"`
	Floor            uint64 `json:"floor"`
	PolicyGeneration uint64 `json:"policyGeneration"`
	HolderLease      string `json:"holderLease"` // "" when free
	HolderOwner      string `json:"holderOwner"`
	Waiters          int    `json:"waiters"`
	Revision         uint64 `json:"revision"`
}

// Health is the body of /healthz and /readyz.
type Health struct {
	Status string `json:"status"` // "ok", or the reason it is not
}

func issuedResponse(is registry.Issued) (IssuedResponse, error) {
	if is.Grant == nil || is.Status == nil {
		return IssuedResponse{}, fmt.Errorf("httpapi: registry returned no grant or status")
	}
	return IssuedResponse{
		Grant:       string(is.Grant.Encode()),
		GrantProof:  is.GrantProof,
		Status:      string(is.Status.Encode()),
		StatusProof: is.StatusProof, ExpiresAfterMs: is.ExpiresAfterMs,
	}, nil
}

func resourceInfo(ri registry.ResourceInfo) ResourceInfo {
	return ResourceInfo{
		Resource: ri.Resource, HighestFence: ri.HighestFence, Floor: ri.Floor,
		PolicyGeneration: ri.PolicyGeneration, HolderLease: ri.HolderLease,
		HolderOwner: ri.HolderOwner, Waiters: ri.Waiters, Revision: ri.Revision,
	}
}
