package stored

import (
	"encoding/json"
	"strconv"
)

// The state and the receipt are encoded on every fenced write, so they
// have encoders of their own: the bytes are exactly json.Marshal's (a
// test checks it over random values), without its reflection. Decoding
// stays encoding/json's, strict.

// AppendState appends the JSON of s to dst.
func AppendState(dst []byte, s State) []byte {
	dst = appendField(dst, '{', "resource", s.Resource)
	dst = appendField(dst, ',', "mode", s.Mode)
	dst = appendUint(dst, "highestFence", s.HighestFence)
	dst = appendField(dst, ',', "root", s.Root)
	dst = appendUint(dst, "lastSegmentSeq", s.LastSegmentSeq)
	dst = appendField(dst, ',', "grant", s.GrantDigest)
	dst = appendField(dst, ',', "grantIssuedAt", s.GrantIssuedAt)
	dst = appendUint(dst, "minPolicyGeneration", s.MinPolicyGeneration)
	dst = append(dst, `,"paused":`...)
	dst = strconv.AppendBool(dst, s.Paused)
	dst = appendField(dst, ',', "pausedReason", s.PausedReason)
	dst = appendUint(dst, "floor", s.Floor)
	dst = appendField(dst, ',', "floorAt", s.FloorAt)
	return append(dst, '}')
}

// AppendReceipt appends the JSON of r to dst.
func AppendReceipt(dst []byte, r Receipt) []byte {
	dst = appendField(dst, '{', "id", r.ID)
	dst = appendField(dst, ',', "resource", r.Resource)
	dst = appendUint(dst, "fenceToken", r.FenceToken)
	dst = appendField(dst, ',', "operationRoot", r.OperationRoot)
	dst = appendField(dst, ',', "operationId", r.OperationID)
	dst = appendUint(dst, "segmentSeq", r.SegmentSeq)
	dst = appendField(dst, ',', "payloadDigest", r.PayloadDigest)
	dst = appendField(dst, ',', "grant", r.GrantDigest)
	dst = appendField(dst, ',', "acceptedAt", r.AcceptedAt)
	dst = appendField(dst, ',', "mode", r.Mode)
	dst = appendField(dst, ',', "outcome", r.Outcome)
	return append(dst, '}')
}

func appendField(dst []byte, sep byte, name, value string) []byte {
	dst = append(dst, sep, '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return appendString(dst, value)
}

func appendUint(dst []byte, name string, v uint64) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return strconv.AppendUint(dst, v, 10)
}

// appendString appends s as json.Marshal quotes it: directly when every
// byte is printable ASCII that JSON leaves alone (digests, instants,
// modes, resource names), else through json.Marshal.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always marshals
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
