// Package wire is the registry API's language, shared by the server
// (registry, registry/httpapi) and the client SDK (client,
// client/httpclient) alike, as etcd's api/v3rpc/rpctypes is: the requests
// and answers in Go and as JSON bodies, and the stable error codes with
// their sentinels. It imports only grant, so a program that takes locks
// links none of the server's code.
//
// Branch on a registry refusal with errors.Is against the sentinels
// (errors.Is(err, wire.ErrBusy)); a *BusyError carries who holds the
// resource. CodeOf gives the stable code of any error that has one. The
// HTTP layer's own codes (CodeBadRequest, CodeForbiddenResource, …) are
// the codes of its refusals before or around a registry call.
package wire
