// This file measures what checking --gate-keys for a change costs, now
// that a change of any key file counts: Reload (SIGHUP: every key file
// read again) and Poll (every --gate-keys-poll-ms: the gate-keys file
// read, each key file's status taken) of an unchanged file of 1, 64 and
// 1024 gates with two keys each. Timings are reported, never asserted:
//
//	go test ./registry/httpapi -run '^$' -bench GateKeysUnchanged -benchmem -count 5
package httpapi

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/grant"
)

func BenchmarkGateKeysUnchanged(b *testing.B) {
	for _, c := range []struct {
		name  string
		gates int
	}{{"reload", 1}, {"reload", 64}, {"reload", 1024}, {"poll", 1}, {"poll", 64}, {"poll", 1024}} {
		gates := c.gates
		b.Run(fmt.Sprintf("%s/gates=%d", c.name, gates), func(b *testing.B) {
			dir := b.TempDir()
			var entries []string
			for g := range gates {
				var keys []string
				for k, st := range []string{"active", "verify-only"} {
					id := fmt.Sprintf("g%d-k%d", g, k)
					sk, err := grant.GenerateKey(grant.AlgHMACSHA256, id, rand.Reader)
					if err != nil {
						b.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, id+".key"), sk.MarshalKeyFile(), 0o600); err != nil {
						b.Fatal(err)
					}
					keys = append(keys, fmt.Sprintf(`{"keyId": %q, "secretFile": %q, "minEpoch": 1, "maxEpoch": 0, "state": %q}`, id, id+".key", st))
				}
				entries = append(entries, fmt.Sprintf(`{"gate": "g%d", "resources": ["g%d/*"], "keys": [%s]}`, g, g, strings.Join(keys, ",")))
			}
			path := filepath.Join(dir, "gate-keys.json")
			if err := os.WriteFile(path, []byte(`{"schema": "gateKeys.v1", "gates": [`+strings.Join(entries, ",")+`]}`), 0o600); err != nil {
				b.Fatal(err)
			}
			f, err := LoadGateKeysFile(path)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			check := f.Reload
			if c.name == "poll" {
				check = f.Poll
			}
			b.ReportAllocs()
			for b.Loop() {
				if changed, err := check(ctx); changed || err != nil {
					b.Fatal(changed, err)
				}
			}
		})
	}
}
