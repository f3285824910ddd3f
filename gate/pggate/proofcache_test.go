// This file proves the proof cache of schema version 9 (fencegate.proofs):
// an entry is written only for a proof that verified, keyed by what the
// check covered; a forged proof beside a cached one is refused (the
// negative control: a cache keyed without the proof accepts it, and an
// entry written for it by hand makes apply accept it, which is why a
// writer may not touch the table, privileges_test.go); the key's state
// and the revocation are checked again on a hit; an install empties it.
package pggate_test

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
)

// forged is proof (mac:<keyId>:<base64url>) with the MAC's first byte
// changed: well formed, under the same key, and false.
func forged(t *testing.T, proof string) string {
	t.Helper()
	i := strings.LastIndex(proof, ":")
	raw, err := base64.RawURLEncoding.DecodeString(proof[i+1:])
	if err != nil || len(raw) != 32 {
		t.Fatalf("proof %q: %v", proof, err)
	}
	raw[0] ^= 1
	return proof[:i+1] + base64.RawURLEncoding.EncodeToString(raw)
}

func TestProofCache(t *testing.T) {
	ctx := context.Background()
	e := conformance.NewEnv(t, newHarness)
	h := e.H.(*harness)
	db := h.w.db
	if err := h.w.setClock(ctx, h.cfg.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	const r = "cache/proofs"
	mut := func(seq uint64) *gate.Mutation {
		return macProofs(e.Mut(r, 5, "op-a", seq, "p"), h.cfg.Verifier.Bundle())
	}
	apply := func(m *gate.Mutation) error {
		_, err := pggate.RunIn(ctx, db, h.w.beginAs(conformance.Owner), m, func(context.Context, *sql.Tx) error { return nil })
		return err
	}
	count := func() (n int) {
		if err := db.QueryRow(`SELECT count(*) FROM fencegate.proofs`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// cached says whether the cache holds proof over msg under schema,
	// with the key the proof names and the SHA-256 of its secret.
	cached := func(schema string, msg []byte, proof string) (ok bool) {
		err := db.QueryRow(`SELECT EXISTS (SELECT FROM fencegate.proofs p JOIN fencegate.keys k ON k.key_id = p.key_id
		    WHERE p.id = sha256(convert_to($1, 'UTF8') || '\x00'::bytea || sha256(convert_to($2, 'UTF8')) || '\x00'::bytea || convert_to($3, 'UTF8'))
		      AND p.key_id = split_part($3, ':', 2) AND p.key_digest = sha256(k.secret))`, schema, string(msg), proof).Scan(&ok)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	// A proof that fails is not kept.
	bad := mut(1)
	bad.GrantProof = forged(t, bad.GrantProof)
	if err := apply(bad); !errors.Is(err, gate.ErrBadProof) || count() != 0 {
		t.Fatalf("a forged grant proof: %v, the cache holds %d entries", err, count())
	}
	m1 := mut(1)
	if err := apply(m1); err != nil {
		t.Fatal(err)
	}
	if count() != 2 || !cached(grant.SchemaGrant, m1.Grant, m1.GrantProof) || !cached(grant.SchemaStatus, m1.Status, m1.StatusProof) {
		t.Fatalf("after one accept the cache holds %d entries, want the grant's and the status's proofs", count())
	}
	// A forged proof beside the cached one is refused, for the grant and
	// for the status, and is not kept.
	m2 := mut(2)
	fg, fs := *m2, *m2
	fg.GrantProof = forged(t, m2.GrantProof)
	fs.StatusProof = forged(t, m2.StatusProof)
	for _, m := range []*gate.Mutation{&fg, &fs} {
		if err := apply(m); !errors.Is(err, gate.ErrBadProof) {
			t.Fatalf("a forged proof beside a cached one: %v, want BAD_PROOF", err)
		}
	}
	if count() != 2 {
		t.Fatalf("the cache holds %d entries after two forged proofs", count())
	}
	// Negative control 1: a cache keyed without the proof (a mutant
	// verify) accepts the forged grant proof of segment 3 after the
	// genuine segment 2 cached the grant's.
	var src string
	if err := db.QueryRow(`SELECT pg_get_functiondef('fencegate.verify(text,bytea,numeric,text,bigint)'::regprocedure)`).Scan(&src); err != nil {
		t.Fatal(err)
	}
	const key = ` || '\x00'::bytea || convert_to(proof, 'UTF8'))`
	if !strings.Contains(src, key) {
		t.Fatalf("verify's cache key is not %q:\n%s", key, src)
	}
	if _, err := db.Exec(strings.Replace(src, key, ")", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`TRUNCATE fencegate.proofs`); err != nil {
		t.Fatal(err)
	}
	mutant := mut(3)
	mutant.GrantProof = forged(t, mutant.GrantProof)
	if err := applyRolledBack(ctx, h, m2, mutant); err != nil {
		t.Fatalf("negative control: a cache keyed without the proof refused the forged proof: %v", err)
	}
	if _, err := pggate.Install(ctx, db); err != nil { // the source's verify again; the cache emptied
		t.Fatal(err)
	}
	if count() != 0 {
		t.Fatalf("after an install the cache holds %d entries", count())
	}
	g1, err := grant.ParseGrant(fg.Grant)
	if err != nil {
		t.Fatal(err)
	}
	// Negative control 2: apply reads the cache: an entry written by hand
	// for the forged grant proof lets it through.
	if err := applyRolledBack(ctx, h, nil, &fg); !errors.Is(err, gate.ErrBadProof) {
		t.Fatalf("the forged proof after the install: %v, want BAD_PROOF", err)
	}
	if _, err := db.Exec(`INSERT INTO fencegate.proofs SELECT sha256(convert_to($1, 'UTF8') || '\x00'::bytea || sha256(convert_to($2, 'UTF8')) || '\x00'::bytea || convert_to($3, 'UTF8')),
	    k.key_id, sha256(k.secret), $4, 9223372036854775807 FROM fencegate.keys k WHERE k.key_id = split_part($3, ':', 2)`,
		grant.SchemaGrant, string(fg.Grant), fg.GrantProof, g1.IssuerEpoch); err != nil {
		t.Fatal(err)
	}
	if err := applyRolledBack(ctx, h, nil, &fg); err != nil {
		t.Fatalf("negative control: with an entry for the forged proof apply refused it: %v", err)
	}
	if _, err := db.Exec(`TRUNCATE fencegate.proofs`); err != nil {
		t.Fatal(err)
	}
	// The policy is applied on a hit: with the proofs cached, a revoked
	// epoch and then a retired key turn the next segment away.
	if err := apply(m2); err != nil || count() != 2 {
		t.Fatalf("segment 2: %v, %d entries", err, count())
	}
	if err := pggate.SetRevokedBelow(ctx, db, g1.IssuerEpoch+1); err != nil {
		t.Fatal(err)
	}
	if err := apply(mut(3)); !errors.Is(err, gate.ErrEpochRevoked) {
		t.Fatalf("a cached proof of a revoked epoch: %v, want EPOCH_REVOKED", err)
	}
	if _, err := db.Exec(`UPDATE fencegate.settings SET revoked_below_epoch = 0`); err != nil {
		t.Fatal(err)
	}
	if err := apply(mut(3)); err != nil {
		t.Fatalf("segment 3 once the revocation is lifted: %v", err)
	}
	kid := strings.Split(m2.GrantProof, ":")[1]
	for _, k := range h.cfg.Verifier.Bundle().File().Keys {
		if k.KeyID == kid {
			if err := pggate.SetKey(ctx, db, pggate.Key{ID: k.KeyID, Secret: macSecret(k.KeyID), MinEpoch: k.MinEpoch, MaxEpoch: k.MaxEpoch, State: grant.KeyRetired}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := apply(mut(4)); !errors.Is(err, gate.ErrBadProof) || !strings.Contains(err.Error(), "retired") {
		t.Fatalf("a cached proof under a retired key: %v, want BAD_PROOF (retired)", err)
	}
}

// applyRolledBack applies m in a transaction it rolls back, after
// applying before (when not nil) in the same transaction.
func applyRolledBack(ctx context.Context, h *harness, before, m *gate.Mutation) error {
	tx, err := h.w.beginAs(conformance.Owner)(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, x := range []*gate.Mutation{before, m} {
		if x == nil {
			continue
		}
		if _, err := pggate.Apply(ctx, tx, x); err != nil {
			return err
		}
	}
	return nil
}
