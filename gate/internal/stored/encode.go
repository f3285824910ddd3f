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
