package stored

import "github.com/fencegate/fencegate/gate/internal/jsonappend"

// The state is encoded on every fenced write, so it has an encoder of its
// own: the bytes are exactly json.Marshal's (a test checks it over random
// values), without its reflection. Decoding stays encoding/json's, strict.

// AppendState appends the JSON of s to dst.
func AppendState(dst []byte, s State) []byte {
	dst = jsonappend.Str(dst, '{', "resource", s.Resource)
	dst = jsonappend.Str(dst, ',', "mode", s.Mode)
	dst = jsonappend.Uint(dst, ',', "highestFence", s.HighestFence)
	dst = jsonappend.Str(dst, ',', "root", s.Root)
	dst = jsonappend.Uint(dst, ',', "lastSegmentSeq", s.LastSegmentSeq)
	dst = jsonappend.Str(dst, ',', "grant", s.GrantDigest)
	dst = jsonappend.Str(dst, ',', "grantIssuedAt", s.GrantIssuedAt)
	dst = jsonappend.Uint(dst, ',', "minPolicyGeneration", s.MinPolicyGeneration)
	dst = jsonappend.Bool(dst, ',', "paused", s.Paused)
	dst = jsonappend.Str(dst, ',', "pausedReason", s.PausedReason)
	dst = jsonappend.Uint(dst, ',', "floor", s.Floor)
	dst = jsonappend.Str(dst, ',', "floorAt", s.FloorAt)
	return append(dst, '}')
}

// AppendReceipt appends the JSON of r to dst.
func AppendReceipt(dst []byte, r Receipt) []byte {
	dst = jsonappend.Str(dst, '{', "id", r.ID)
	dst = jsonappend.Str(dst, ',', "resource", r.Resource)
	dst = jsonappend.Uint(dst, ',', "fenceToken", r.FenceToken)
	dst = jsonappend.Str(dst, ',', "operationRoot", r.OperationRoot)
	dst = jsonappend.Str(dst, ',', "operationId", r.OperationID)
	dst = jsonappend.Uint(dst, ',', "segmentSeq", r.SegmentSeq)
	dst = jsonappend.Str(dst, ',', "payloadDigest", r.PayloadDigest)
	dst = jsonappend.Str(dst, ',', "grant", r.GrantDigest)
	dst = jsonappend.Str(dst, ',', "acceptedAt", r.AcceptedAt)
	dst = jsonappend.Str(dst, ',', "mode", r.Mode)
	dst = jsonappend.Str(dst, ',', "outcome", r.Outcome)
	return append(dst, '}')
}

// AppendString appends s as json.Marshal quotes it.
func AppendString(dst []byte, s string) []byte { return jsonappend.String(dst, s) }
