// This file measures one round of the full fault matrix with Ed25519 and
// with HMAC proofs, against the natural baseline of a round with no faults
// in the same run.
package sim

import (
	"testing"

	"github.com/fencegate/fencegate/grant"
)

func benchRounds(b *testing.B, alg grant.Alg, rates [faultCount]float64) {
	cfg := Config{Rounds: 1 << 30, Seed: 1, Rates: rates, Alg: alg}
	if err := cfg.fill(); err != nil {
		b.Fatal(err)
	}
	keys, err := newKeySet(cfg.Alg, cfg.skewBound())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		RunRound(&cfg, keys, i+1)
	}
}

func BenchmarkRoundAllFaultsEd25519(b *testing.B) { benchRounds(b, grant.AlgEd25519, DefaultRates) }

func BenchmarkRoundAllFaultsHMAC(b *testing.B) { benchRounds(b, grant.AlgHMACSHA256, DefaultRates) }

func BenchmarkRoundNoFaultsEd25519(b *testing.B) {
	benchRounds(b, grant.AlgEd25519, [faultCount]float64{})
}
