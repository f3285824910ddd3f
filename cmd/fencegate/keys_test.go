// Tests the operator's key workflow end to end through the CLI: generate,
// bundle, sign, verify, rotate (add → verify-only → retire), revoke, and
// that inspect names the field of a malformed grant.
package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fencegate(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return out.String() + errOut.String(), code
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, code := fencegate(t, args...)
	if code != 0 {
		t.Fatalf("fencegate %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

const exampleGrant = `schema: lockGrant.v1
resource: invoice-batch/2026-07-19
owner: worker-settlement-7
requestId: req-8c1f
lease: lease-91
operationRoot: sha256:a8ecef89a08f7fc01eec252712ec95804cd465fa15ca32e2827baf0cb09b78b3
operationClass: settle
fenceToken: 8842
backendRevision: 1920184
policyGeneration: 12
issuerEpoch: 37
ttlMs: 10000
issuedAt: 2026-07-19T10:00:00.000Z
expiresAt: 2026-07-19T10:00:10.000Z
`

func TestKeyRotationCLI(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	os.WriteFile(p("grant.txt"), []byte(exampleGrant), 0o644)
	mustRun(t, "keys", "gen", "--id", "k1", "--out", p("k1.key"))
	mustRun(t, "keys", "gen", "--id", "k2", "--out", p("k2.key"))
	mustRun(t, "keys", "gen", "--id", "m1", "--alg", "hmac-sha256", "--out", p("m1.key"))
	if _, code := fencegate(t, "keys", "gen", "--id", "k1", "--out", p("k1.key")); code == 0 {
		t.Fatal("keys gen overwrote an existing key file")
	}
	mustRun(t, "keys", "bundle", "add", "--bundle", p("trust.json"), "--key", p("k1.key"))
	mustRun(t, "keys", "bundle", "add", "--bundle", p("trust.json"), "--key", p("m1.key"))
	oldProof := strings.TrimSpace(mustRun(t, "grant", "sign", "--key", p("k1.key"), p("grant.txt")))
	macProof := strings.TrimSpace(mustRun(t, "grant", "sign", "--key", p("m1.key"), p("grant.txt")))
	verify := func(proof string) (string, int) {
		return fencegate(t, "grant", "verify", "--bundle", p("trust.json"), "--proof", proof, p("grant.txt"))
	}
	for _, proof := range []string{oldProof, macProof} {
		if out, code := verify(proof); code != 0 || !strings.Contains(out, "verdict: OK") {
			t.Fatalf("verify %s: exit %d\n%s", proof, code, out)
		}
	}
	// Overlap: k2 signs, k1 still verifies.
	mustRun(t, "keys", "bundle", "add", "--bundle", p("trust.json"), "--key", p("k2.key"))
	mustRun(t, "keys", "bundle", "verify-only", "--bundle", p("trust.json"), "--id", "k1")
	if out, code := verify(oldProof); code != 0 {
		t.Fatalf("overlap: old proof rejected\n%s", out)
	}
	mustRun(t, "keys", "bundle", "retire", "--bundle", p("trust.json"), "--id", "k1")
	if out, code := verify(oldProof); code != 1 || !strings.Contains(out, "REJECTED KEY_RETIRED") {
		t.Fatalf("retired: exit %d\n%s", code, out)
	}
	mustRun(t, "keys", "bundle", "revoke-epoch", "--bundle", p("trust.json"), "--below", "38")
	newProof := strings.TrimSpace(mustRun(t, "grant", "sign", "--key", p("k2.key"), p("grant.txt")))
	if out, code := verify(newProof); code != 1 || !strings.Contains(out, "REJECTED EPOCH_REVOKED") {
		t.Fatalf("revoked epoch: exit %d\n%s", code, out)
	}
	show := mustRun(t, "keys", "bundle", "show", "--bundle", p("trust.json"))
	for _, want := range []string{"version: 6", "revokedBelowEpoch: 38", "k1", "retired", "k2", "active", "m1"} {
		if !strings.Contains(show, want) {
			t.Errorf("bundle show lacks %q:\n%s", want, show)
		}
	}
}

func TestInspectNamesField(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.txt")
	os.WriteFile(path, []byte(strings.Replace(exampleGrant, "fenceToken: 8842", "fenceToken: 08842", 1)), 0o644)
	out, code := fencegate(t, "grant", "inspect", path)
	if code != 1 || !strings.Contains(out, "field fenceToken") || !strings.Contains(out, "leading zero") {
		t.Fatalf("inspect of malformed grant: exit %d\n%s", code, out)
	}
	good := filepath.Join(dir, "good.txt")
	os.WriteFile(good, []byte(exampleGrant), 0o644)
	if out := mustRun(t, "grant", "inspect", good); !strings.Contains(out, "digest: sha256:0dc87ae5") {
		t.Fatalf("inspect lacks the golden digest:\n%s", out)
	}
}

func TestGrantExample(t *testing.T) {
	out := mustRun(t, "grant", "example")
	for _, want := range []string{"ACCEPTED", "REJECTED BAD_SIGNATURE", "REJECTED KEY_RETIRED"} {
		if !strings.Contains(out, want) {
			t.Errorf("example output lacks %q", want)
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	if _, code := fencegate(t, "nonsense"); code != 2 {
		t.Fatalf("unknown command exit %d, want 2", code)
	}
}
