// This file is the test world of the package: a fresh database with the
// gate installed, callers as database roles, and a registry that issues
// HMAC proofs under the keys enrolled in the database.
package pggate_test

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// world is one database with the gate installed.
type world struct {
	db *sql.DB
	t  testing.TB

	mu      sync.Mutex
	roles   map[string]string // workload identity → role
	clockMs int64
}

// newWorld installs the gate on a fresh database and creates the
// business table effects, writable by every role.
func newWorld(t testing.TB) *world { return newWorldAt(t, pggate.SchemaVersion()) }

// newWorldAt is newWorld with the gate at schema version v: as
// released (released_test.go) below SchemaVersion.
func newWorldAt(t testing.TB, v int) *world {
	t.Helper()
	var db *sql.DB
	ctx := context.Background()
	if v < pggate.SchemaVersion() {
		db = newReleasedDB(t, v)
	} else {
		// No WAL flush per commit: the tests check decisions, not the disk.
		db = newGateDB(t)
		if _, err := pggate.Install(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{
		`CREATE TABLE effects (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, resource TEXT NOT NULL, payload TEXT NOT NULL)`,
		`GRANT SELECT, INSERT, UPDATE ON effects TO PUBLIC`,
	} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return &world{db: db, t: t, roles: map[string]string{}}
}

// clusterRoles serializes the creation of roles and their grants, which
// are the cluster's, shared by the databases of tests that run in
// parallel: two sessions granting the same membership at once collide.
var clusterRoles sync.Mutex

// roleOf returns the database role of a workload identity, creating it
// (cluster-wide, shared by the package's databases) and mapping it.
func (w *world) roleOf(ctx context.Context, identity string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r, ok := w.roles[identity]; ok {
		return r, nil
	}
	h := sha256.Sum256([]byte(identity))
	role := "fgc_" + hex.EncodeToString(h[:8])
	clusterRoles.Lock()
	_, err := w.db.ExecContext(ctx, fmt.Sprintf(`DO $$ BEGIN CREATE ROLE %s NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`, role))
	if err == nil {
		_, err = w.db.ExecContext(ctx, fmt.Sprintf(`GRANT fencegate_writer TO %s`, role))
	}
	clusterRoles.Unlock()
	if err == nil {
		err = pggate.MapCaller(ctx, w.db, role, identity)
	}
	if err != nil {
		return "", err
	}
	w.roles[identity] = role
	return role, nil
}

// setClock moves the gate clock when it changed.
func (w *world) setClock(ctx context.Context, now time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.UnixMilli() == w.clockMs {
		return nil
	}
	if err := pggate.SetClock(ctx, w.db, now); err != nil {
		return err
	}
	w.clockMs = now.UnixMilli()
	return nil
}

// beginAs begins a transaction whose session user is identity's role.
func (w *world) beginAs(identity string) func(context.Context) (*sql.Tx, error) {
	return func(ctx context.Context) (*sql.Tx, error) {
		role, err := w.roleOf(ctx, identity)
		if err != nil {
			return nil, err
		}
		tx, err := w.db.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `SET LOCAL SESSION AUTHORIZATION `+role); err != nil {
			tx.Rollback()
			return nil, err
		}
		return tx, nil
	}
}

// run applies m as caller at now with the business effect of appending
// payload (failing with errFail when fail).
func (w *world) run(ctx context.Context, caller string, now time.Time, m *gate.Mutation, payload string, fail error) (gate.Receipt, error) {
	if err := w.setClock(ctx, now); err != nil {
		return gate.Receipt{}, err
	}
	return pggate.RunIn(ctx, w.db, w.beginAs(caller), m, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO effects (resource, payload) VALUES ($1, $2)`, m.Resource, payload); err != nil {
			return err
		}
		return fail
	})
}

func (w *world) effects(ctx context.Context, resource string) ([]string, error) {
	rows, err := w.db.QueryContext(ctx, `SELECT payload FROM effects WHERE resource = $1 ORDER BY id`, resource)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// macSecret is the test secret of the HMAC key the database holds under
// keyID.
func macSecret(keyID string) []byte {
	s := sha256.Sum256([]byte("pggate-test/" + keyID))
	return s[:]
}

// mirror enrolls, for every Ed25519 key of bundle, an HMAC key of the same
// ID, epochs and state, and the bundle's revocation: the database's trust
// bundle is the Go verifier's, in HMAC.
func (w *world) mirror(ctx context.Context, b *grant.Bundle) error {
	for _, k := range b.File().Keys {
		if err := pggate.SetKey(ctx, w.db, pggate.Key{ID: k.KeyID, Secret: macSecret(k.KeyID), MinEpoch: k.MinEpoch, MaxEpoch: k.MaxEpoch, State: k.State}); err != nil {
			return err
		}
	}
	return pggate.SetRevokedBelow(ctx, w.db, b.File().RevokedBelowEpoch)
}

// macProofs returns m with each Ed25519 proof whose signature is genuine
// under a key of bundle replaced by the HMAC proof of the same message
// under the database's key of that ID: what a registry that MACs every
// grant it signs with the gate's enrolled key sends. Every other proof
// stays as it is (the database refuses it, as the Go verifier does).
func macProofs(m *gate.Mutation, b *grant.Bundle) *gate.Mutation {
	c := *m
	c.GrantProof = macProof(grant.SchemaGrant, m.Grant, m.GrantProof, b)
	if len(m.Status) > 0 {
		c.StatusProof = macProof(grant.SchemaStatus, m.Status, m.StatusProof, b)
	}
	return &c
}

func macProof(schema string, msg []byte, proof string, b *grant.Bundle) string {
	p, err := grant.ParseProof(proof)
	if err != nil || p.Alg != grant.AlgEd25519 {
		return proof
	}
	d := sha256.Sum256(msg)
	in := append(append(append([]byte("fencegate/proof/v1\x00"), schema...), 0), d[:]...)
	for _, k := range b.File().Keys {
		pub, err := base64.RawURLEncoding.DecodeString(k.PublicKey)
		if k.KeyID != p.KeyID || err != nil || len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, in, p.Bytes) {
			continue
		}
		mac := hmac.New(sha256.New, macSecret(k.KeyID))
		mac.Write(in)
		return grant.Proof{Alg: grant.AlgHMACSHA256, KeyID: k.KeyID, Bytes: mac.Sum(nil)}.String()
	}
	return proof
}
