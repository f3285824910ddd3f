package lockstate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// leaseID builds its input and name by hand (no fmt on the grant path);
// both must be byte for byte what fmt made, which stored records and
// grants already carry.
func TestLeaseIDIsTheFormattedID(t *testing.T) {
	formatted := func(resource, owner, requestID string, fence uint64, issuedAtMs int64) string {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%d", resource, owner, requestID, issuedAtMs)))
		return fmt.Sprintf("l%d-%s", fence, hex.EncodeToString(sum[:4]))
	}
	r := rand.New(rand.NewPCG(3, 4))
	long := strings.Repeat("x", 300) // past the stack buffer
	cases := [][3]string{{"a", "b", "c"}, {"", "", ""}, {long, "owner", "r-1"}, {"jobs/nightly", long, long}}
	for _, c := range cases {
		for _, v := range []struct {
			fence uint64
			at    int64
		}{{0, 0}, {1, -1}, {math.MaxUint64, math.MaxInt64}, {7, math.MinInt64}, {r.Uint64(), r.Int64()}} {
			if got, want := leaseID(c[0], c[1], c[2], v.fence, v.at), formatted(c[0], c[1], c[2], v.fence, v.at); got != want {
				t.Fatalf("leaseID(%.10q, %.10q, %.10q, %d, %d) = %q, want %q", c[0], c[1], c[2], v.fence, v.at, got, want)
			}
		}
	}
}
