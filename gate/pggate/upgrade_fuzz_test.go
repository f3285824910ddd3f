// This file proves fencegate.parse_envelope says what the plainer parser
// of schema version 3 said, reasons included: for any text, version 3's
// (taken from its released fixture, testdata/released/v3.txtar, and
// created under another name) and the installed one, which reads each
// member once since version 4, return the same envelope or raise the
// same SQLSTATE, message and detail. FuzzParseMatchesSQL holds the
// installed one to gate.DecodeMutation's verdicts; this one keeps its
// reasons, which a client reads, from drifting.
package pggate_test

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// v3ParseEnvelope matches version 3's parse_envelope in its script.
var v3ParseEnvelope = regexp.MustCompile(`(?s)CREATE OR REPLACE FUNCTION fencegate\.parse_envelope\(.*?\nEND \$fg\$;`)

// withV3ParseEnvelope returns a database with the gate installed,
// version 3's parse_envelope beside it as fencegate.parse_envelope_v3,
// and parse_outcome, which says what either one does with a text.
func withV3ParseEnvelope(t testing.TB) *sql.DB {
	db := newWorld(t).db
	body := v3ParseEnvelope.FindString(releasedScript(t, 3))
	if body == "" {
		t.Fatal("version 3 has no parse_envelope")
	}
	body = strings.Replace(body, "fencegate.parse_envelope(", "fencegate.parse_envelope_v3(", 1)
	for _, s := range []string{body, parseOutcome} {
		if _, err := db.ExecContext(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// parseOutcome is what one parse_envelope (v3: version 3's) does with s:
// the envelope's text, or the error's SQLSTATE, message and detail, as a
// client reads them. It lets one query compare many texts.
const parseOutcome = `CREATE FUNCTION fencegate.parse_outcome(v3 BOOLEAN, s TEXT) RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE
  code TEXT;
  msg TEXT;
  detail TEXT;
BEGIN
  IF v3 THEN RETURN fencegate.parse_envelope_v3(s)::text; END IF;
  RETURN fencegate.parse_envelope(s)::text;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
  RETURN code || ' ' || msg || ' ' || detail;
END $$`

// envelopeParsersAgree runs the texts among bs that PostgreSQL can
// receive through both parsers, in one query, and names the first they
// treat differently.
func envelopeParsersAgree(db *sql.DB, bs ...[]byte) error {
	var texts []string
	for _, b := range bs {
		if utf8.Valid(b) && !bytesContainNUL(b) {
			texts = append(texts, string(b))
		}
	}
	rows, err := db.QueryContext(context.Background(), `SELECT s, fencegate.parse_outcome(true, s), fencegate.parse_outcome(false, s)
  FROM unnest($1::text[]) WITH ORDINALITY AS u(s, i) ORDER BY i`, texts)
	if err != nil {
		return err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var s string
		var v3, now sql.NullString
		if err := rows.Scan(&s, &v3, &now); err != nil {
			return err
		}
		if !v3.Valid || !sameSinceV3(v3.String, now) {
			return fmt.Errorf("envelope %q:\nversion 3: %v\ninstalled: %v", s, v3, now)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n != len(texts) {
		return fmt.Errorf("%d outcomes for %d texts", n, len(texts))
	}
	return nil
}

// grantProofV3, grantProofNow: the one change to parse_envelope since
// version 3 that its outcomes show: schema 8 (batch proofs) raised
// grantProof's bound from 256 to 512 bytes.
const (
	grantProofV3  = "field grantProof: want 1..256 bytes"
	grantProofNow = "field grantProof: want 1..512 bytes"
)

// sameSinceV3 reports whether version 3's outcome v3 and the installed
// one agree but for the grantProof bound: v3's reason is read as naming
// the new bound, and where v3 refused a grantProof for its length and the
// installed parser took it (257..512 bytes), the rest of the envelope is
// not compared.
func sameSinceV3(v3 string, now sql.NullString) bool {
	if !now.Valid {
		return false
	}
	if strings.Contains(v3, grantProofV3) && !strings.Contains(now.String, "field grantProof") {
		return true
	}
	return strings.ReplaceAll(v3, grantProofV3, grantProofNow) == now.String
}

// upgradeSeeds adds to parseSeeds' envelopes the shapes whose reasons
// depend on the order of the checks.
func upgradeSeeds() [][]byte {
	return append(parseSeeds()["envelope"],
		[]byte(`{"resource":5,"resource":"a"}`), []byte(`{"resource":"a","resource":5}`),
		[]byte(`{"x":1,"resource":"\u0000"}`), []byte(`{"resource":"\u0000","x":1}`), []byte(`{"lease":"\ud800"}`),
		[]byte(`{"fenceToken":null,"segmentSeq":"1"}`), []byte(`{"grant":"a\nb","fenceToken":1e3}`), []byte(`{}`), []byte(`"x"`), []byte(`{`))
}

func FuzzEnvelopeParserMatchesV3(f *testing.F) {
	for _, s := range upgradeSeeds() {
		f.Add(s)
	}
	db := withV3ParseEnvelope(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := envelopeParsersAgree(db, b); err != nil {
			t.Fatal(err)
		}
	})
}

// TestEnvelopeParserSeedsMatchV3 runs the seeds, and single-byte changes
// of each, through both versions.
func TestEnvelopeParserSeedsMatchV3(t *testing.T) {
	t.Parallel()
	db := withV3ParseEnvelope(t)
	for _, s := range upgradeSeeds() {
		var changed [][]byte // one query a seed
		for i := range len(s) {
			for _, c := range []byte{'0', ' ', '"', '}', ',', 'x', '\\'} {
				b := append([]byte(nil), s...)
				b[i] = c
				changed = append(changed, b)
			}
		}
		if err := envelopeParsersAgree(db, changed...); err != nil {
			t.Fatal(err)
		}
	}
	// Negative control: a parser that says another thing is caught.
	if _, err := db.Exec(`CREATE OR REPLACE FUNCTION fencegate.parse_envelope_v3(envelope TEXT) RETURNS fencegate.envelope_t LANGUAGE plpgsql AS $$
BEGIN
  IF envelope LIKE '%"x"%' THEN RAISE EXCEPTION USING ERRCODE = 'FG001', MESSAGE = 'another reason'; END IF;
  RETURN fencegate.parse_envelope(envelope);
END $$`); err != nil {
		t.Fatal(err)
	}
	if err := envelopeParsersAgree(db, upgradeSeeds()...); err == nil || !strings.Contains(err.Error(), "another reason") {
		t.Fatalf("a version 3 parser with another reason: %v", err)
	}
}
