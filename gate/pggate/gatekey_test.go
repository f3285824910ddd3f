// This file proves a key per gate: with the registry signing in Ed25519
// and adding each covering gate's own pair (the registry's gate-keys code,
// httpapi.GateKeys), a database that enrolled only its own key accepts
// the envelope; another database, enrolled with another gate's key,
// rejects the same envelope as BAD_PROOF (FG002); and gate A's key cannot
// make a proof gate B accepts, whether A's pair is labelled as A's or as
// B's key. The negative control enrolls A's key at B too (one key shared
// by every gate, as before per-gate keys) and shows the same forgery
// accepted.
package pggate_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

const gateKeysJSON = `{"schema": "gateKeys.v1", "gates": [
  {"gate": "db-a", "resources": ["a/*"], "keys": [{"keyId": "gate-a-1", "secretFile": "gate-a-1.key", "minEpoch": 1, "maxEpoch": 0, "state": "active"}]},
  {"gate": "db-b", "resources": ["b/*"], "keys": [{"keyId": "gate-b-1", "secretFile": "gate-b-1.key", "minEpoch": 1, "maxEpoch": 0, "state": "active"}]}]}`

// gateKeysOf loads the registry's gate keys, the secrets being macSecret's.
func gateKeysOf(t *testing.T) *httpapi.GateKeys {
	t.Helper()
	dir := t.TempDir()
	for _, id := range []string{"gate-a-1", "gate-b-1"} {
		k, err := grant.NewSigningKey(grant.AlgHMACSHA256, id, macSecret(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, id+".key"), k.MarshalKeyFile(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	gk, err := httpapi.ParseGateKeys([]byte(gateKeysJSON), dir)
	if err != nil {
		t.Fatal(err)
	}
	return gk
}

// issued is what a registry signing in Ed25519 with these gate keys
// sends for w, as an envelope.
func issued(t *testing.T, iss *gatetest.Issuer, gk *httpapi.GateKeys, w gatetest.Writer, payload string) *gate.Mutation {
	t.Helper()
	m := iss.Mutation(w, 1, payload)
	g, _ := grant.ParseGrant(m.Grant)
	st, _ := grant.ParseStatus(m.Status)
	var err error
	if m.GateProofs, err = gk.GateProofs(w.Resource, g, st); err != nil {
		t.Fatal(err)
	}
	return m
}

// enrollOnly gives a fresh database the one key id.
func enrollOnly(t *testing.T, ids ...string) *world {
	t.Helper()
	w := newWorld(t)
	for _, id := range ids {
		if err := pggate.SetKey(context.Background(), w.db, pggate.Key{ID: id, Secret: macSecret(id), MinEpoch: 1, State: grant.KeyActive}); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func TestOneGatesKeyMakesNoProofAnotherGateAccepts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gk := gateKeysOf(t)
	iss := gatetest.NewIssuer("per-gate")
	dbA, dbB := enrollOnly(t, "gate-a-1"), enrollOnly(t, "gate-b-1")
	wB := gatetest.Writer{Resource: "b/ledger", Owner: "worker-b", Lease: "l-1", OperationID: "op-1", Fence: 3}
	m := issued(t, iss, gk, wB, "genuine")
	if len(m.GateProofs) != 1 || m.GateProofs[0].Gate != "db-b" || m.GrantProof[:4] != "sig:" {
		t.Fatalf("the registry sent %q and %+v", m.GrantProof, m.GateProofs)
	}
	if _, err := dbB.run(ctx, "worker-b", iss.Now, m, "genuine", nil); err != nil {
		t.Fatalf("gate B, its own pair: %v", err)
	}
	// The same envelope at gate A: no pair under A's key, and the
	// registry's Ed25519 proof is not one PostgreSQL checks.
	if _, err := dbA.run(ctx, "worker-b", iss.Now, m, "genuine", nil); !isBadProof(err) {
		t.Fatalf("gate A, gate B's envelope: %v, want BAD_PROOF (%s)", err, pggate.SQLState(gate.BadProof))
	}

	for name, forge := range map[string]func(*gate.Mutation){
		"A's pair as A's": func(f *gate.Mutation) { f.GateProofs = []grant.GateProof{macPair(f, "db-a", "gate-a-1", "gate-a-1")} },
		"A's pair labelled as B's key": func(f *gate.Mutation) {
			f.GateProofs = []grant.GateProof{macPair(f, "db-b", "gate-b-1", "gate-a-1")}
		},
		"A's MAC in the single fields": func(f *gate.Mutation) {
			p := macPair(f, "db-a", "gate-a-1", "gate-a-1")
			f.GateProofs, f.GrantProof, f.StatusProof = nil, p.GrantProof, p.StatusProof
		},
	} {
		t.Run(name, func(t *testing.T) {
			// What a database holding A's key can make for B's resource:
			// any grant, MACed with A's key.
			f := iss.Mutation(gatetest.Writer{Resource: "b/ledger", Owner: "worker-b", Lease: "l-2", OperationID: "op-2", Fence: 9}, 1, "forged")
			forge(f)
			if _, err := dbB.run(ctx, "worker-b", iss.Now, f, "forged", nil); !isBadProof(err) {
				t.Fatalf("gate B took a proof under A's key: %v", err)
			}
			// Negative control: with A's key enrolled at B too (one key for
			// every gate), the forgery is accepted.
			shared := enrollOnly(t, "gate-a-1", "gate-b-1")
			// (A MAC labelled with B's key ID is checked under B's secret
			// even there: relabelling never helps.)
			_, err := shared.run(ctx, "worker-b", iss.Now, f, "forged", nil)
			if relabelled := name == "A's pair labelled as B's key"; relabelled != isBadProof(err) {
				t.Fatalf("control: a gate holding A's key and B's answered %v to A's forgery", err)
			}
		})
	}
	effects, err := dbB.effects(ctx, "b/ledger")
	if err != nil || len(effects) != 1 || effects[0] != "genuine" {
		t.Fatalf("gate B's effects: %v %v", effects, err)
	}
}

// macPair is a pair labelled gate and keyID over f's grant and status,
// made with secretOf's secret.
func macPair(f *gate.Mutation, gateName, keyID, secretOf string) grant.GateProof {
	mac := func(schema string, b []byte) string {
		d := sha256.Sum256(b)
		h := hmac.New(sha256.New, macSecret(secretOf))
		h.Write(append(append(append([]byte("fencegate/proof/v1\x00"), schema...), 0), d[:]...))
		return grant.Proof{Alg: grant.AlgHMACSHA256, KeyID: keyID, Bytes: h.Sum(nil)}.String()
	}
	return grant.GateProof{Gate: gateName, GrantProof: mac(grant.SchemaGrant, f.Grant), StatusProof: mac(grant.SchemaStatus, f.Status)}
}

func isBadProof(err error) bool {
	var rej *gate.Rejection
	return errors.As(err, &rej) && rej.Outcome == gate.BadProof
}
