// Tests that the canonical encoding round-trips and that the strict parsers
// reject every non-canonical form, naming the field and the reason.
package grant

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestGrantRoundTrip(t *testing.T) {
	g := testGrant()
	b := g.Encode()
	p, err := ParseGrant(b)
	if err != nil {
		t.Fatalf("ParseGrant(Encode(g)): %v", err)
	}
	if got := p.Encode(); !bytes.Equal(got, b) {
		t.Fatalf("Encode(Parse(b)) != b:\n%s\nvs\n%s", got, b)
	}
	if p.Digest() != g.Digest() {
		t.Fatal("digest changed across round trip")
	}
}

func TestGrantHeldRoundTrip(t *testing.T) {
	g := testGrantHeld()
	b := g.Encode()
	p, err := ParseGrant(b)
	if err != nil {
		t.Fatalf("ParseGrant(Encode(g)): %v", err)
	}
	if !bytes.Equal(p.Encode(), b) || !p.HeldUntil.Equal(g.HeldUntil) {
		t.Fatalf("Encode(Parse(b)) != b:\n%s", p.Encode())
	}
	if p.Digest() == testGrant().Digest() {
		t.Fatal("the held statement is not covered by the digest")
	}
}

func TestStatusRoundTrip(t *testing.T) {
	s := testStatus(testGrant())
	b := s.Encode()
	p, err := ParseStatus(b)
	if err != nil {
		t.Fatalf("ParseStatus(Encode(s)): %v", err)
	}
	if got := p.Encode(); !bytes.Equal(got, b) {
		t.Fatalf("Encode(Parse(b)) != b")
	}
}

// edit replaces the first occurrence of old in the canonical grant.
func editGrant(old, new string) []byte {
	s := string(testGrant().Encode())
	if !strings.Contains(s, old) {
		panic("fixture lacks " + old)
	}
	return []byte(strings.Replace(s, old, new, 1))
}

func TestParseGrantRejects(t *testing.T) {
	tests := []struct {
		name, field, reason string
		in                  []byte
	}{
		{"unknown field", "color", "unknown field", editGrant("lease: lease-91\n", "lease: lease-91\ncolor: red\n")},
		{"missing field", "expiresAt", "missing", editGrant("expiresAt: 2026-07-19T10:00:10.000Z\n", "")},
		{"duplicate field", "lease", "duplicate field", editGrant("operationRoot:", "lease: lease-91\noperationRoot:")},
		{"reordered fields", "lease", "out of order", editGrant("requestId: req-8c1f\nlease: lease-91\n", "lease: lease-91\nrequestId: req-8c1f\n")},
		{"leading zero", "fenceToken", "leading zero", editGrant("fenceToken: 8842", "fenceToken: 08842")},
		{"plus sign", "fenceToken", "sign not allowed", editGrant("fenceToken: 8842", "fenceToken: +8842")},
		{"minus sign", "backendRevision", "sign not allowed", editGrant("backendRevision: 1920184", "backendRevision: -1")},
		{"overflow", "fenceToken", "overflows uint64", editGrant("fenceToken: 8842", "fenceToken: 18446744073709551616")},
		{"huge overflow", "fenceToken", "overflows uint64", editGrant("fenceToken: 8842", "fenceToken: 99999999999999999999999999")},
		{"zero fence", "fenceToken", "at least 1", editGrant("fenceToken: 8842", "fenceToken: 0")},
		{"hex number", "ttlMs", "leading zero", editGrant("ttlMs: 10000", "ttlMs: 0x10")},
		{"letters", "ttlMs", "not a decimal", editGrant("ttlMs: 10000", "ttlMs: 1e4")},
		{"non-UTF-8", "", "UTF-8", editGrant("lease-91", "lease-\xff1")},
		{"non-ASCII", "owner", "non-ASCII", editGrant("worker-settlement-7", "worker-séttlement-7")},
		{"control character", "lease", "control character", editGrant("lease-91", "lease\x0791")},
		{"tab in value", "lease", "control character", editGrant("lease-91", "lease\t91")},
		{"trailing space", "lease", "trailing whitespace", editGrant("lease-91\n", "lease-91 \n")},
		{"double space", "lease", "leading whitespace", editGrant("lease: lease-91", "lease:  lease-91")},
		{"carriage return", "lease", "control character", editGrant("lease-91\n", "lease-91\r\n")},
		{"blank line", "", "name: value", editGrant("lease-91\n", "lease-91\n\n")},
		{"no final newline", "", "newline", []byte(strings.TrimSuffix(string(testGrant().Encode()), "\n"))},
		{"upper-case resource", "resource", "upper-case", editGrant("invoice-batch", "Invoice-batch")},
		{"empty segment", "resource", "empty segment", editGrant("invoice-batch/2026", "invoice-batch//2026")},
		{"dot segment", "resource", "dot segment", editGrant("invoice-batch/2026-07-19", "invoice-batch/../2026-07-19")},
		{"leading slash", "resource", "empty segment", editGrant("resource: invoice", "resource: /invoice")},
		{"space in resource", "resource", "not allowed", editGrant("invoice-batch/", "invoice batch/")},
		{"long resource", "resource", "limit 256", editGrant("invoice-batch", strings.Repeat("a", 257))},
		{"bad owner", "owner", "neither", editGrant("worker-settlement-7", "worker:settlement")},
		{"spiffe without path", "owner", "no workload path", editGrant("worker-settlement-7", "spiffe://example.org")},
		{"spiffe upper-case domain", "owner", "trust domain", editGrant("worker-settlement-7", "spiffe://Example.org/w")},
		{"spiffe dot segment", "owner", "dot segment", editGrant("worker-settlement-7", "spiffe://example.org/a/./b")},
		{"upper-case digest", "operationRoot", "lowercase hex", []byte(strings.Replace(string(testGrant().Encode()), testGrant().OperationRoot.String(), strings.ToUpper(testGrant().OperationRoot.String()[7:]), 1))},
		{"wrong schema", "schema", "want lockGrant.v1", editGrant("lockGrant.v1", "lockGrant.v2")},
		{"bad time", "issuedAt", "UTC instant", editGrant("2026-07-19T10:00:00.000Z", "2026-07-19T10:00:00Z")},
		{"offset time", "issuedAt", "UTC instant", editGrant("2026-07-19T10:00:00.000Z", "2026-07-19T10:00:00.000+00:00")},
		{"impossible date", "issuedAt", "UTC instant", editGrant("2026-07-19T10:00:00.000Z", "2026-02-30T10:00:00.000Z")},
		{"expiry inconsistent", "expiresAt", "issuedAt + ttlMs", editGrant("10:00:10.000Z", "10:00:11.000Z")},
		{"unknown class chars", "operationClass", "not allowed", editGrant("operationClass: settle", "operationClass: Settle")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseGrant(tc.in)
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("want *FieldError wrapping ErrMalformed, got %v", err)
			}
			if fe.Field != tc.field || !strings.Contains(fe.Reason, tc.reason) {
				t.Fatalf("got field %q reason %q; want field %q reason containing %q", fe.Field, fe.Reason, tc.field, tc.reason)
			}
		})
	}
}

// TestParseGrantHeldRejects: the heldUntil line is optional only as the
// last line, and bounded by issuedAt and expiresAt.
func TestParseGrantHeldRejects(t *testing.T) {
	base := string(testGrantHeld().Encode())
	const held = "heldUntil: 2026-07-19T10:00:05.000Z\n"
	tests := []struct{ name, old, new, field, reason string }{
		{"before issuedAt", "heldUntil: 2026-07-19T10:00:05", "heldUntil: 2026-07-19T09:59:59", "heldUntil", "within issuedAt..expiresAt"},
		{"past expiresAt", "heldUntil: 2026-07-19T10:00:05", "heldUntil: 2026-07-19T10:00:11", "heldUntil", "within issuedAt..expiresAt"},
		{"before expiresAt", "expiresAt: 2026-07-19T10:00:10.000Z\n" + held, held + "expiresAt: 2026-07-19T10:00:10.000Z\n", "heldUntil", "out of order"},
		{"duplicate", held, held + held, "heldUntil", "duplicate"},
		{"bad time", "heldUntil: 2026-07-19T10:00:05.000Z", "heldUntil: 2026-07-19T10:00:05Z", "heldUntil", "UTC instant"},
		{"empty", "heldUntil: 2026-07-19T10:00:05.000Z", "heldUntil: ", "heldUntil", "empty value"},
		{"trailing field", held, held + "color: red\n", "color", "unknown field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseGrant([]byte(strings.Replace(base, tc.old, tc.new, 1)))
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Reason, tc.reason) {
				t.Fatalf("want FieldError on %s (%s), got %v", tc.field, tc.reason, err)
			}
		})
	}
}

func TestParseStatusRejects(t *testing.T) {
	base := string(testStatus(testGrant()).Encode())
	tests := []struct{ name, old, new, field string }{
		{"unknown state", "state: HELD", "state: LOCKED", "state"},
		{"lower-case state", "state: HELD", "state: held", "state"},
		{"grant schema", "grantStatus.v1", "lockGrant.v1", "schema"},
		{"valid before issued", "validUntil: 2026-07-19T10:00:05.000Z", "validUntil: 2026-07-19T09:00:05.000Z", "validUntil"},
		{"zero epoch", "issuerEpoch: 37", "issuerEpoch: 0", "issuerEpoch"},
		{"reordered", "state: HELD\nbackendRevision: 1920184\n", "backendRevision: 1920184\nstate: HELD\n", "backendRevision"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseStatus([]byte(strings.Replace(base, tc.old, tc.new, 1)))
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("want FieldError on %s, got %v", tc.field, err)
			}
		})
	}
}

func TestOwnerForms(t *testing.T) {
	for _, ok := range []string{"worker-settlement-7", "W.7_x", "spiffe://example.org/ns/prod/sa/settle", "spiffe://td/w"} {
		if err := ValidateOwner(ok); err != nil {
			t.Errorf("ValidateOwner(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "-worker", "spiffe://", "spiffe:///w", "spiffe://td/", "spiffe://td//w", "spiffe://td/w/..", "http://td/w", "a b", strings.Repeat("w", 129)} {
		if err := ValidateOwner(bad); err == nil {
			t.Errorf("ValidateOwner(%q) = nil, want error", bad)
		}
	}
}

// TestOperationRootFraming shows that moving bytes between resource and
// operation ID changes the root: the length framing is unambiguous.
func TestOperationRootFraming(t *testing.T) {
	pairs := [][2]string{{"a/b", "c"}, {"a", "b/c"}, {"ab", "c"}, {"a", "bc"}, {"a", "b"}, {"a\x00", "b"}}
	seen := map[Digest][2]string{}
	for _, p := range pairs {
		r := OperationRoot(p[0], p[1])
		if prev, dup := seen[r]; dup {
			t.Fatalf("%q and %q share root %s", prev, p, r)
		}
		seen[r] = p
	}
	for r, p := range seen { // computed again from fresh strings: the same root
		if OperationRoot(string([]byte(p[0])), string([]byte(p[1]))) != r {
			t.Fatalf("root of %q not deterministic", p)
		}
	}
}

// TestRejectedCharacterIsTheOneTyped: an identifier's refusal names the
// character the user typed, not its first byte read as Latin-1, and a byte
// that is not UTF-8 in hex.
func TestRejectedCharacterIsTheOneTyped(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{ValidateResource("jobs/é"), `character 'é' at byte 5`},
		{ValidateResource("jobs/a b"), `character ' ' at byte 6`},
		{ValidateResource("jobs/\xff"), `byte 0xff (not UTF-8) at byte 5`},
		{ValidateOwner("wörker"), `character 'ö' at byte 1`},
		{ValidateOwner("spiffe://tdé/w"), `trust domain: character 'é'`},
		{ValidateOwner("spiffe://td/wé"), `path: character 'é'`},
		{ValidateKeyID("k€y"), `character '€' at byte 1`},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) || strings.Contains(c.err.Error(), "Ã") {
			t.Errorf("error %v, want it to contain %q", c.err, c.want)
		}
	}
}
