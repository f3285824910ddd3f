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
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
)

// v3ParseEnvelope matches version 3's parse_envelope in its script.
var v3ParseEnvelope = regexp.MustCompile(`(?s)CREATE OR REPLACE FUNCTION fencegate\.parse_envelope\(.*?\nEND \$fg\$;`)

// withV3ParseEnvelope returns a database with the gate installed and
// version 3's parse_envelope beside it as fencegate.parse_envelope_v3.
func withV3ParseEnvelope(t testing.TB) *sql.DB {
	db := newWorld(t).db
	body := v3ParseEnvelope.FindString(releasedScript(t, 3))
	if body == "" {
		t.Fatal("version 3 has no parse_envelope")
	}
	body = strings.Replace(body, "fencegate.parse_envelope(", "fencegate.parse_envelope_v3(", 1)
	if _, err := db.ExecContext(context.Background(), body); err != nil {
		t.Fatal(err)
	}
	return db
}

// parseOutcome is what one parse_envelope does with s: the envelope's
// text, or the error's code, message and detail.
func parseOutcome(db *sql.DB, fn, s string) (string, error) {
	var out string
	err := db.QueryRowContext(context.Background(), `SELECT fencegate.`+fn+`($1)::text`, s).Scan(&out)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s %s %s", pe.Code, pe.Message, pe.Detail), nil
	}
	return out, err
}

func envelopeParsersAgree(db *sql.DB, b []byte) error {
	if !utf8.Valid(b) || bytesContainNUL(b) {
		return nil // not text PostgreSQL can receive
	}
	v3, err := parseOutcome(db, "parse_envelope_v3", string(b))
	if err != nil {
		return err
	}
	v4, err := parseOutcome(db, "parse_envelope", string(b))
	if err != nil {
		return err
	}
	if v3 != v4 {
		return fmt.Errorf("envelope %q:\nversion 3: %s\ninstalled: %s", b, v3, v4)
	}
	return nil
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
		for i := range len(s) {
			for _, c := range []byte{'0', ' ', '"', '}', ',', 'x', '\\'} {
				b := append([]byte(nil), s...)
				b[i] = c
				if err := envelopeParsersAgree(db, b); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
