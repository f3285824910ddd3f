package ledger

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/fencegate/fencegate/grant"
)

// Entry is one key and the value a worker writes to it.
type Entry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// payloadDomain separates ledger payload digests from every other hash.
const payloadDomain = "fencegate-example/ledger/entries/v1\x00"

// PayloadDigest is the digest a worker puts in its envelope for entries
// and the ledger checks before it writes them: sha256 over the domain and
// each key and value, length-prefixed so that no two batches collide.
func PayloadDigest(entries []Entry) grant.Digest {
	h := sha256.New()
	h.Write([]byte(payloadDomain))
	var n [8]byte
	for _, e := range entries {
		for _, s := range []string{e.Key, e.Value} {
			binary.BigEndian.PutUint64(n[:], uint64(len(s)))
			h.Write(n[:])
			h.Write([]byte(s))
		}
	}
	var d grant.Digest
	copy(d[:], h.Sum(nil))
	return d
}
