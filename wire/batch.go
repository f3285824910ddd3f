package wire

import "encoding/json"

// BatchRequest is POST /v1/batch: several acquire, renew, release and
// status operations in one HTTP exchange. The server runs them
// concurrently, each exactly as its own endpoint would (the same strict
// decoding, policy check, registry call, answer and error code), so a
// batch orders nothing: it is as if each operation had been sent on a
// connection of its own at the same moment. One operation's failure
// leaves the others' answers as they are.
//
// An acquire in a batch does not wait (WaitMs must be 0): a batch's
// answer comes when its slowest operation's does, and a wait would hold
// every other answer back. Send a waiting acquire to /v1/acquire.
type BatchRequest struct {
	// Operations run concurrently; at least one, at most the server's
	// BatchOperationsMax (64).
	Operations []BatchOperation `json:"operations"`
}

// The operations a batch may carry, by BatchOperation.Op.
const (
	BatchAcquire = "acquire" // Request is an AcquireRequest (WaitMs 0); the answer an IssuedResponse
	BatchRenew   = "renew"   // Request is a LeaseRequest; the answer an IssuedResponse
	BatchRelease = "release" // Request is a LeaseRequest; the answer a ReleaseResponse
	BatchStatus  = "status"  // Request is a StatusRequest; the answer an IssuedResponse
)

// BatchOperation is one operation of a batch: its name and the body its
// own endpoint (POST /v1/<op>) takes, byte for byte.
type BatchOperation struct {
	Op      string          `json:"op"`
	Request json.RawMessage `json:"request"`
}

// BatchResponse answers a batch that was read: one answer per operation,
// in the request's order, whatever each one's outcome. A batch refused
// as a whole (not authenticated, not one JSON object of this shape, too
// many operations) gets an ErrorBody instead, as any call does.
type BatchResponse struct {
	Answers []BatchAnswer `json:"answers"`
}

// BatchAnswer is one operation's answer: the HTTP status its own
// endpoint would have answered with, and that endpoint's body — Answer
// when Status is 200, Error otherwise.
type BatchAnswer struct {
	Status int             `json:"status"`
	Answer json.RawMessage `json:"answer,omitempty"`
	Error  *ErrorBody      `json:"error,omitempty"`
}
