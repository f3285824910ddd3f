// Proves the rule of the orchestrator's watch on ZooKeeper's history: a
// node read in the same history (version and mzxid risen together, the
// version wrapping) is no regression; a lower version, the same version
// at another mzxid, a higher version at an older mzxid, or a node gone
// is one.
package chaos

import (
	"math"
	"strings"
	"testing"
)

func TestHistoryWentBack(t *testing.T) {
	const rev = watchRevPath
	seen := map[string]znodeSeen{rev: {version: 40, mzxid: 0x300000010}, "/fencegate/r/=a": {version: 7, mzxid: 0x30000000f}}
	for _, c := range []struct {
		name string
		now  map[string]znodeSeen
		back string // a substring of the answer, "" for none
	}{
		{"same history, later", map[string]znodeSeen{rev: {41, 0x400000002}, "/fencegate/r/=a": {7, 0x30000000f}}, ""},
		{"a version wrapped", map[string]znodeSeen{rev: {40, 0x300000010}, "/fencegate/r/=a": {7, 0x30000000f}, "/fencegate/r/=b": {math.MinInt32, 9}}, ""},
		{"fewer commits at a later epoch (ZooKeeper lost some)", map[string]znodeSeen{rev: {31, 0x500000003}, "/fencegate/r/=a": {7, 0x30000000f}}, rev + " version 31"},
		{"same version, another transaction", map[string]znodeSeen{rev: {40, 0x500000001}, "/fencegate/r/=a": {7, 0x30000000f}}, rev},
		{"more commits but older zxids (a restore reusing them)", map[string]znodeSeen{rev: {45, 0x300000001}, "/fencegate/r/=a": {7, 0x30000000f}}, rev},
		{"a record gone", map[string]znodeSeen{rev: {41, 0x400000002}}, "=a gone"},
	} {
		got := historyWentBack(seen, c.now)
		if c.back == "" && got != "" || c.back != "" && !strings.Contains(got, c.back) {
			t.Errorf("%s: %q, want %q", c.name, got, c.back)
		}
	}
	wrapped := map[string]znodeSeen{rev: {math.MaxInt32, 0x100}}
	if got := historyWentBack(wrapped, map[string]znodeSeen{rev: {math.MinInt32, 0x101}}); got != "" {
		t.Errorf("a version wrapping past MaxInt32 is called a regression: %s", got)
	}
}
