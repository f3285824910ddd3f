// This file measures what gate proofs add to the registry's hot path: an
// acquire and a release on the registry over one in-memory store, with
// no gate keys (the natural baseline), one gate covering the resource,
// and four (a grant MAC and a status MAC each). Timings are reported,
// never asserted. BenchmarkGateProofsSigning isolates the signing: one
// gate's two MACs against the registry's own two Ed25519 signatures of
// the same grant and status:
//
//	go test ./registry/httpapi -run '^$' -bench 'AcquireGateProofs|GateProofsSigning' -benchmem -count 5
package httpapi

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/wire"
)

func BenchmarkAcquireGateProofs(b *testing.B) {
	for _, gates := range []int{0, 1, 4} {
		b.Run(fmt.Sprintf("gates=%d", gates), func(b *testing.B) {
			reg := benchGateRegistry(b, gates)
			ctx := context.Background()
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n++
				is, err := reg.Acquire(ctx, "alice", wire.AcquireRequest{Resource: "bench/1", OperationID: "op", OperationClass: "bench",
					RequestID: fmt.Sprint("r", n), TTLMs: 30_000})
				if err == nil && len(is.GateProofs) != gates {
					err = fmt.Errorf("%d gate proofs, want %d", len(is.GateProofs), gates)
				}
				if err == nil {
					err = reg.Release(ctx, "alice", "bench/1", is.Grant.Lease)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchGateRegistry is a registry whose gate keys enroll gates gates
// covering "bench/*" (none: no WithGateProofs at all).
func benchGateRegistry(b *testing.B, gates int) *registry.Registry {
	key, err := grant.GenerateKey(grant.AlgEd25519, "bench-key", rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	var opts []registry.Option
	if gates > 0 {
		opts = append(opts, registry.WithGateProofs(benchGateKeys(b, gates)))
	}
	reg, err := registry.New(memstore.New(), registry.DefaultConfig(1), clock.System{}, key, opts...)
	if err != nil {
		b.Fatal(err)
	}
	return reg
}

// benchGateKeys enrolls gates gates covering "bench/*".
func benchGateKeys(b *testing.B, gates int) *GateKeys {
	dir := b.TempDir()
	var entries []string
	for i := range gates {
		id := fmt.Sprint("g", i)
		k, _ := grant.GenerateKey(grant.AlgHMACSHA256, id, rand.Reader)
		if err := os.WriteFile(filepath.Join(dir, id+".key"), k.MarshalKeyFile(), 0o600); err != nil {
			b.Fatal(err)
		}
		entries = append(entries, `{"gate": "`+id+`", "resources": ["bench/*"], "keys": [{"keyId": "`+id+`", "secretFile": "`+id+`.key", "minEpoch": 1, "maxEpoch": 0, "state": "active"}]}`)
	}
	gk, err := ParseGateKeys([]byte(`{"schema": "gateKeys.v1", "gates": [`+strings.Join(entries, ",")+`]}`), dir)
	if err != nil {
		b.Fatal(err)
	}
	return gk
}

func BenchmarkGateProofsSigning(b *testing.B) {
	iss, _ := grant.GenerateKey(grant.AlgEd25519, "reg", rand.Reader)
	now := time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)
	g := &grant.Grant{Resource: "bench/1", Owner: "alice", RequestID: "r-1", Lease: "l-1", OperationRoot: grant.OperationRoot("bench/1", "op"),
		OperationClass: "bench", FenceToken: 7, BackendRevision: 9, PolicyGeneration: 1, IssuerEpoch: 1, TTLMs: 30_000,
		IssuedAt: now, ExpiresAt: now.Add(30 * time.Second)}
	st := &grant.Status{Grant: g.Digest(), State: grant.StateHeld, BackendRevision: 9, IssuerEpoch: 1, IssuedAt: now, ValidUntil: now.Add(2 * time.Second)}
	b.Run("ed25519-registry-pair", func(b *testing.B) {
		for b.Loop() {
			if _, err := iss.Sign(g); err != nil {
				b.Fatal(err)
			}
			if _, err := iss.Sign(st); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-gate-mac-pair", func(b *testing.B) {
		gk := benchGateKeys(b, 1)
		for b.Loop() {
			if ps, err := gk.GateProofs("bench/1", g, st); err != nil || len(ps) != 1 {
				b.Fatal(ps, err)
			}
		}
	})
}
