// Package httpapi serves the registry over HTTP/JSON under /v1 and holds the
// typed Go client for it.
//
// Every /v1 call needs an identity (Authenticator): the verified client
// certificate's SPIFFE URI SAN, else its CN, or for development a bearer
// token from a token file. A call with none is refused with 401 before the
// registry is touched. Admin calls (/v1/admin/...) also need an identity on
// the admin list, else 403. Every other call that names a resource must be
// allowed by the Authorizer (a resource Policy, reloadable as a
// PolicyFile, or AllowAll), else 403 FORBIDDEN_RESOURCE, audited.
//
// A request with a body must be declared application/json (415 before the
// body is read otherwise: CheckJSONContentType). It is decoded strictly:
// one JSON object, no unknown fields, no trailing data, at most
// RequestBytesMax bytes. Errors are JSON
// {"code": ..., "message": ...} where code is the registry's stable code
// (wire.CodeOf) or one of this package's transport codes (CodeBadRequest
// and friends); see statusFor for the HTTP status of each.
//
// Responses carry grants and statuses as their canonical lockGrant.v1 and
// grantStatus.v1 text, byte for byte as the registry signed them, with the
// proofs beside them, so a client or gate verifies the registry's own bytes
// rather than a re-encoding.
//
// /healthz answers 200 while the process runs; /readyz answers 200 only when
// the store answers; /metrics serves Prometheus metrics from a private
// registry.
package httpapi
