// This file proves the SQL parsers are the Go ones: a grant, a status
// statement or an envelope is accepted by fencegate.parse_grant,
// parse_status or parse_envelope exactly when grant.ParseGrant,
// grant.ParseStatus or gate.DecodeMutation accepts it (the Go parsers
// accept only canonical bytes, Encode(Parse(b)) == b, so both accept the
// canonical form and nothing else).
package pggate_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// unholdable matches JSON escapes PostgreSQL's text cannot hold (NUL, a
// lone surrogate): such an envelope is MALFORMED in the database whatever
// its field, while Go decodes it (a documented difference; no valid
// envelope contains one).
var unholdable = regexp.MustCompile(`(?i)\\u(0000|d[89a-f][0-9a-f]{2})`)

// parseAgrees checks one input of kind ("grant", "status", "envelope").
func parseAgrees(db *sql.DB, kind string, b []byte) error {
	if !utf8.Valid(b) || bytesContainNUL(b) || kind == "envelope" && unholdable.Match(b) {
		return nil // not text PostgreSQL can receive
	}
	var goOK bool
	switch kind {
	case "grant":
		_, err := grant.ParseGrant(b)
		goOK = err == nil
	case "status":
		_, err := grant.ParseStatus(b)
		goOK = err == nil
	case "envelope":
		_, err := gate.DecodeMutation(b)
		goOK = err == nil
	}
	sqlOK, err := sqlParses(db, kind, string(b))
	if err != nil {
		return err
	}
	if goOK != sqlOK {
		return fmt.Errorf("%s %q: Go accepts %v, SQL accepts %v", kind, b, goOK, sqlOK)
	}
	return nil
}

func bytesContainNUL(b []byte) bool {
	for _, c := range b {
		if c == 0 {
			return true
		}
	}
	return false
}

func sqlParses(db *sql.DB, kind, s string) (bool, error) {
	ctx := context.Background()
	var ok bool
	var err error
	switch kind {
	case "grant":
		err = db.QueryRowContext(ctx, `SELECT (fencegate.parse_grant($1)).resource IS NOT NULL`, s).Scan(&ok)
	case "status":
		err = db.QueryRowContext(ctx, `SELECT fencegate.parse_status($1) IS NOT NULL`, s).Scan(&ok)
	case "envelope":
		_, err = db.ExecContext(ctx, `SELECT fencegate.parse_envelope($1)`, s)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == pggate.SQLState(gate.Malformed) {
			return false, nil
		}
		ok = err == nil
	}
	return ok, err
}

// parseSeeds are genuine messages and envelopes, and near misses.
func parseSeeds() map[string][][]byte {
	iss := gatetest.NewIssuer("parse")
	m := iss.Mutation(gatetest.Writer{Resource: "a/b", Owner: "spiffe://td/w/1", Lease: "l-1", OperationID: "op:1", Fence: 9}, 2, "p")
	env, _ := m.MarshalJSON()
	h := iss.HeldMutation(gatetest.Writer{Resource: "a/b", Owner: "spiffe://td/w/1", Lease: "l-1", OperationID: "op:1", Fence: 9}, 2, "p")
	gm := *m
	gm.GateProofs = []grant.GateProof{{Gate: "ledger-db", GrantProof: m.GrantProof, StatusProof: m.StatusProof}, {Gate: "b", GrantProof: "mac:x:y", StatusProof: "z"}}
	genv, _ := gm.MarshalJSON()
	withGP := func(gp string) []byte {
		return append(append([]byte(nil), env[:len(env)-1]...), []byte(`,"gateProofs":`+gp+`}`)...)
	}
	return map[string][][]byte{
		"grant": {m.Grant, append(append([]byte(nil), m.Grant...), 'x'), m.Grant[:len(m.Grant)-1],
			h.Grant, append(append([]byte(nil), h.Grant...), m.Grant[len(m.Grant)-37:]...)},
		"status": {m.Status, []byte("schema: grantStatus.v1\n")},
		"envelope": {env, []byte(`{"resource":"a","resource":"a"}`), []byte(`{"fenceToken":1.0}`), []byte(`[]`),
			[]byte(`{"resource":"a","lease":"l","operationId":"o","fenceToken":1,"segmentSeq":1,"payloadDigest":"sha256:` +
				"0101010101010101010101010101010101010101010101010101010101010101" + `","grant":"g","grantProof":"p","status":null}`),
			genv, withGP(`null`), withGP(`[]`), withGP(`{}`), withGP(`[null]`), withGP(`[{"gate":"a","grantProof":"p","statusProof":"s","gate":"a"}]`),
			withGP(`[{"gate":"a","grantProof":"p"}]`), withGP(`[{"gate":"a","grantProof":"p","statusProof":"s","Gate":"b"}]`),
			withGP(`[{"gate":"a","grantProof":"p","statusProof":"s"},{"gate":"a","grantProof":"p","statusProof":"s"}]`),
			withGP(`[{"gate":null,"grantProof":"p","statusProof":1}]`), withGP(`[` + strings.Repeat(`{"gate":"a","grantProof":"p","statusProof":"s"},`, 8) + `{"gate":"i","grantProof":"p","statusProof":"s"}]`)},
	}
}

func FuzzParseMatchesSQL(f *testing.F) {
	for kind, seeds := range parseSeeds() {
		for _, s := range seeds {
			f.Add(kind, s)
		}
	}
	db := newWorld(f).db
	f.Fuzz(func(t *testing.T, kind string, b []byte) {
		if kind != "grant" && kind != "status" && kind != "envelope" {
			return
		}
		if err := parseAgrees(db, kind, b); err != nil {
			t.Fatal(err)
		}
	})
}

// TestParseSeedsAgree runs the seeds, and single-byte changes of each,
// through both parsers.
func TestParseSeedsAgree(t *testing.T) {
	t.Parallel()
	db := newWorld(t).db
	for kind, seeds := range parseSeeds() {
		for _, s := range seeds {
			for i := range len(s) {
				for _, c := range []byte{'0', ' ', '\n', ':', 'Z', '"', '}', 0x7f} {
					b := append([]byte(nil), s...)
					b[i] = c
					if err := parseAgrees(db, kind, b); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}
