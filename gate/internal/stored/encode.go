package stored

import (
	"encoding/hex"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/jsonappend"
	"github.com/fencegate/fencegate/grant"
)

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

// AppendFenceState appends the stored form of s: exactly the bytes of
// AppendState(dst, FromState(s)), without FromState's strings (the two
// digests' text and the two instants' are appended in place). A
// key-value adapter encodes the state on every fenced write, so this is
// on its path (gate/redisgate's stateBlob).
func AppendFenceState(dst []byte, s gate.FenceState) []byte {
	dst = jsonappend.Str(dst, '{', "resource", s.Resource)
	dst = jsonappend.Str(dst, ',', "mode", string(s.Mode))
	dst = jsonappend.Uint(dst, ',', "highestFence", s.HighestFence)
	dst = appendDigest(jsonappend.Name(dst, ',', "root"), s.Root)
	dst = jsonappend.Uint(dst, ',', "lastSegmentSeq", s.LastSegmentSeq)
	dst = appendDigest(jsonappend.Name(dst, ',', "grant"), s.GrantDigest)
	dst = appendInstant(jsonappend.Name(dst, ',', "grantIssuedAt"), s.GrantIssuedAt)
	dst = jsonappend.Uint(dst, ',', "minPolicyGeneration", s.MinPolicyGeneration)
	dst = jsonappend.Bool(dst, ',', "paused", s.Paused)
	dst = jsonappend.Str(dst, ',', "pausedReason", s.PausedReason)
	dst = jsonappend.Uint(dst, ',', "floor", s.Floor)
	dst = appendInstant(jsonappend.Name(dst, ',', "floorAt"), s.FloorAt)
	return append(dst, '}')
}

// digestTextPrefix begins grant.Digest's text form (grant.Digest.String);
// TestAppendFenceStateMatches holds the two together.
const digestTextPrefix = "sha256:"

// appendDigest appends digest(d) quoted: "" for the zero digest, else
// its text form (printable ASCII: JSON leaves it alone).
func appendDigest(dst []byte, d grant.Digest) []byte {
	dst = append(dst, '"')
	if !d.IsZero() {
		dst = hex.AppendEncode(append(dst, digestTextPrefix...), d[:])
	}
	return append(dst, '"')
}

// appendInstant appends instant(t) quoted: "" for the zero time, else
// grant.TimeLayout in UTC (digits, '-', ':', '.', 'T', 'Z': JSON leaves
// them alone).
func appendInstant(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	if !t.IsZero() {
		dst = t.UTC().AppendFormat(dst, grant.TimeLayout)
	}
	return append(dst, '"')
}
