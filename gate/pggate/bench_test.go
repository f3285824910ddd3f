// This file measures what the gate inside PostgreSQL costs a write: the
// same one-row INSERT in its own transaction, alone (the natural
// baseline) and behind fencegate.apply, with the proof in the envelope's
// own fields or as this gate's pair in gateProofs beside the registry's
// Ed25519 proof (a key per gate), through database/sql on a real
// PostgreSQL (synchronous_commit=off: the round trips and the PL/pgSQL,
// not the disk). Run:
//
//	go test ./gate/pggate -run '^$' -bench . -count 5
package pggate_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
)

func BenchmarkPlainInsert(b *testing.B) {
	w := newWorld(b)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		tx, err := w.beginAs(conformance.Owner)(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO effects (resource, payload) VALUES ($1, $2)`, "bench/r", "p"); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyInsert accepts segment after segment of one operation
// under one fence: the common path (status proof, no replay).
func BenchmarkApplyInsert(b *testing.B) { applyInsert(b, false) }

// BenchmarkApplyInsertGatePair is BenchmarkApplyInsert with the MACs as
// the gate's pair in gateProofs and the registry's Ed25519 proofs in the
// single fields: what the database sees under a key per gate.
func BenchmarkApplyInsertGatePair(b *testing.B) { applyInsert(b, true) }

func applyInsert(b *testing.B, pair bool) {
	e := conformance.NewEnv(b, newHarness)
	h := e.H.(*harness)
	ctx := context.Background()
	const r = "bench/r"
	ms := make([]*gate.Mutation, 0, b.N)
	for i := range b.N {
		m := e.Mut(r, 5, "op-a", uint64(i+1), "p")
		mac := macProofs(m, h.cfg.Verifier.Bundle())
		if pair {
			m.GateProofs = []grant.GateProof{{Gate: "bench-db", GrantProof: mac.GrantProof, StatusProof: mac.StatusProof}}
			mac = m
		}
		ms = append(ms, mac)
	}
	if err := h.w.setClock(ctx, h.cfg.Clock.Now()); err != nil {
		b.Fatal(err)
	}
	begin := h.w.beginAs(conformance.Owner)
	b.ResetTimer()
	for _, m := range ms {
		_, err := pggate.RunIn(ctx, h.w.db, begin, m, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO effects (resource, payload) VALUES ($1, $2)`, r, "p")
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
