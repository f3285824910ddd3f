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
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

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

// parseAgrees checks inputs of kind ("grant", "status", "envelope"),
// those PostgreSQL can receive, in one query (withParses).
func parseAgrees(db *sql.DB, kind string, bs ...[]byte) error {
	var texts []string
	var goOK []bool
	for _, b := range bs {
		if !utf8.Valid(b) || bytesContainNUL(b) || kind == "envelope" && unholdable.Match(b) {
			continue // not text PostgreSQL can receive
		}
		var err error
		switch kind {
		case "grant":
			_, err = grant.ParseGrant(b)
		case "status":
			_, err = grant.ParseStatus(b)
		case "envelope":
			_, err = gate.DecodeMutation(b)
		}
		texts = append(texts, string(b))
		goOK = append(goOK, err == nil)
	}
	rows, err := db.QueryContext(context.Background(), `SELECT fencegate.parses($1, s) FROM unnest($2::text[]) WITH ORDINALITY AS u(s, i) ORDER BY i`, kind, texts)
	if err != nil {
		return err
	}
	defer rows.Close()
	i := 0
	for ; rows.Next(); i++ {
		var verdict string
		if err := rows.Scan(&verdict); err != nil {
			return err
		}
		if verdict != "accepted" && verdict != "rejected" {
			return fmt.Errorf("%s %q: %s", kind, texts[i], verdict)
		}
		if sqlOK := verdict == "accepted"; goOK[i] != sqlOK {
			return fmt.Errorf("%s %q: Go accepts %v, SQL accepts %v", kind, texts[i], goOK[i], sqlOK)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if i != len(texts) {
		return fmt.Errorf("%d verdicts for %d texts", i, len(texts))
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

// withParses adds to db's gate fencegate.parses(kind, s): 'accepted'
// when the SQL parser of kind accepts s, 'rejected' when it does not
// (for an envelope, when it raises MALFORMED), else the error.
func withParses(t testing.TB, db *sql.DB) *sql.DB {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), fmt.Sprintf(`CREATE FUNCTION fencegate.parses(kind TEXT, s TEXT) RETURNS TEXT LANGUAGE plpgsql AS $$
BEGIN
  IF kind = 'grant' THEN
    RETURN CASE WHEN (fencegate.parse_grant(s)).resource IS NOT NULL THEN 'accepted' ELSE 'rejected' END;
  ELSIF kind = 'status' THEN
    RETURN CASE WHEN fencegate.parse_status(s) IS NOT NULL THEN 'accepted' ELSE 'rejected' END;
  END IF;
  PERFORM fencegate.parse_envelope(s);
  RETURN 'accepted';
EXCEPTION WHEN OTHERS THEN
  RETURN CASE WHEN kind = 'envelope' AND SQLSTATE = %s THEN 'rejected' ELSE SQLSTATE || ' ' || SQLERRM END;
END $$`, quoteLiteral(pggate.SQLState(gate.Malformed)))); err != nil {
		t.Fatal(err)
	}
	return db
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

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
	db := withParses(f, newWorld(f).db)
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
	db := withParses(t, newWorld(t).db)
	for kind, seeds := range parseSeeds() {
		for _, s := range seeds {
			var changed [][]byte // one query a seed
			for i := range len(s) {
				for _, c := range []byte{'0', ' ', '\n', ':', 'Z', '"', '}', 0x7f} {
					b := append([]byte(nil), s...)
					b[i] = c
					changed = append(changed, b)
				}
			}
			if err := parseAgrees(db, kind, changed...); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Negative control: a status parser that accepts nothing is caught.
	if _, err := db.Exec(`CREATE OR REPLACE FUNCTION fencegate.parse_status(b TEXT) RETURNS fencegate.status_t LANGUAGE sql IMMUTABLE AS 'SELECT NULL::fencegate.status_t'`); err != nil {
		t.Fatal(err)
	}
	if err := parseAgrees(db, "status", parseSeeds()["status"]...); err == nil || !strings.Contains(err.Error(), "Go accepts true, SQL accepts false") {
		t.Fatalf("a status parser that accepts nothing: %v", err)
	}
}
