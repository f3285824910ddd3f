// This file proves schema version 4's rewrites of fencegate.parse_envelope
// and fencegate.split_fields change nothing but their cost: for any text,
// version 1's function (taken from the embedded version 1 script, created
// under another name) and the installed one return the same value or
// raise the same SQLSTATE, message and detail.
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

	"github.com/fencegate/fencegate/gate/pggate"
)

// rewritten are the functions version 4 rewrote, each with the call
// that feeds it one text ($1), in version 1's name and in version 4's.
var rewritten = map[string]struct{ fn, call string }{
	"envelope": {"parse_envelope", `fencegate.%s($1)::text`},
	"grant": {"split_fields", `fencegate.%s($1, ARRAY['schema', 'resource', 'owner', 'requestId', 'lease', 'operationRoot',
    'operationClass', 'fenceToken', 'backendRevision', 'policyGeneration', 'issuerEpoch', 'ttlMs', 'issuedAt', 'expiresAt'])::text`},
	"status": {"split_fields", `fencegate.%s($1, ARRAY['schema', 'grant', 'state', 'backendRevision', 'issuerEpoch', 'issuedAt', 'validUntil'])::text`},
}

// withV1Functions returns a database with the gate installed and version
// 1's parse_envelope and split_fields beside it, named with _v1.
func withV1Functions(t testing.TB) *sql.DB {
	db := newWorld(t).db
	script, err := pggate.Script(1, "fencegate")
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{"parse_envelope", "split_fields"} {
		body := regexp.MustCompile(`(?s)CREATE FUNCTION fencegate\.` + fn + `\(.*?\nEND \$fg\$;`).FindString(script)
		if body == "" {
			t.Fatalf("version 1 has no %s", fn)
		}
		body = strings.Replace(body, "fencegate."+fn+"(", "fencegate."+fn+"_v1(", 1)
		if _, err := db.ExecContext(context.Background(), body); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// outcome is what one function does with s: its value as text ("NULL"
// for none), or the error's code, message and detail.
func outcome(db *sql.DB, call, s string) (string, error) {
	var out sql.NullString
	err := db.QueryRowContext(context.Background(), `SELECT `+call, s).Scan(&out)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s %s %s", pe.Code, pe.Message, pe.Detail), nil
	}
	if !out.Valid {
		return "NULL", err
	}
	return out.String, err
}

// versionsAgree runs b through version 1's and version 4's function of
// kind ("envelope", "grant", "status").
func versionsAgree(db *sql.DB, kind string, b []byte) error {
	r, ok := rewritten[kind]
	if !ok || !utf8.Valid(b) || bytesContainNUL(b) {
		return nil // not text PostgreSQL can receive
	}
	v1, err := outcome(db, fmt.Sprintf(r.call, r.fn+"_v1"), string(b))
	if err != nil {
		return err
	}
	v4, err := outcome(db, fmt.Sprintf(r.call, r.fn), string(b))
	if err != nil {
		return err
	}
	if v1 != v4 {
		return fmt.Errorf("%s %q:\nversion 1: %s\nversion 4: %s", kind, b, v1, v4)
	}
	return nil
}

// upgradeSeeds adds to parseSeeds the envelopes whose reasons depend on
// the order of the checks, and messages whose lines are near misses.
func upgradeSeeds() map[string][][]byte {
	s := parseSeeds()
	s["envelope"] = append(s["envelope"],
		[]byte(`{"resource":5,"resource":"a"}`), []byte(`{"resource":"a","resource":5}`),
		[]byte(`{"x":1,"resource":"\u0000"}`), []byte(`{"resource":"\u0000","x":1}`), []byte(`{"lease":"\ud800"}`),
		[]byte(`{"fenceToken":null,"segmentSeq":"1"}`), []byte(`{"grant":"a\nb","fenceToken":1e3}`), []byte(`{}`), []byte(`"x"`), []byte(`{`))
	s["grant"] = append(s["grant"], []byte("schema: lockGrant.v1\n\n"), []byte("schema:  x\n"), []byte("schema: a: b\n"), []byte("\n"))
	s["status"] = append(s["status"], []byte("schema: grantStatus.v1\r\n"), []byte("Schema: x\n"), []byte("schema: x \n"))
	return s
}

func FuzzV4MatchesV1(f *testing.F) {
	for kind, seeds := range upgradeSeeds() {
		for _, s := range seeds {
			f.Add(kind, s)
		}
	}
	db := withV1Functions(f)
	f.Fuzz(func(t *testing.T, kind string, b []byte) {
		if err := versionsAgree(db, kind, b); err != nil {
			t.Fatal(err)
		}
	})
}

// TestV4SeedsMatchV1 runs the seeds, and single-byte changes of each,
// through both versions.
func TestV4SeedsMatchV1(t *testing.T) {
	db := withV1Functions(t)
	for kind, seeds := range upgradeSeeds() {
		for _, s := range seeds {
			for i := range len(s) {
				for _, c := range []byte{'0', ' ', '"', '}', ',', 'x', '\\', '\n', ':'} {
					b := append([]byte(nil), s...)
					b[i] = c
					if err := versionsAgree(db, kind, b); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}
