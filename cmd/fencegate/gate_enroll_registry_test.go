// This file proves the registry half of fencegate gate enroll: it
// creates the gate-keys file, names the key file and never its secret,
// rotates (a new active key moves the old one to verify-only), refuses
// to move a key back or to give one gate another gate's key, and the
// file it writes is one serve loads.
package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/registry/httpapi"
)

func TestGateEnrollWritesTheRegistrysGateKeys(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "gate-keys.json")
	key := func(id string) string {
		p := filepath.Join(dir, id+".key")
		mustRun(t, "keys", "gen", "--id", id, "--alg", "hmac-sha256", "--out", p)
		return p
	}
	k1, k2, o1 := key("ledger-1"), key("ledger-2"), key("other-1")
	if out, code := fencegate(t, "gate", "enroll", "--key", k1, "--registry-keys", file, "--gate-name", "ledger-db"); code == 0 || !strings.Contains(out, "--resources") {
		t.Fatalf("a new gate without --resources: exit %d\n%s", code, out)
	}
	mustRun(t, "gate", "enroll", "--key", k1, "--registry-keys", file, "--gate-name", "ledger-db", "--resources", "ledger/*")
	mustRun(t, "gate", "enroll", "--key", o1, "--registry-keys", file, "--gate-name", "other-db", "--resources", "other/*")
	out := mustRun(t, "gate", "enroll", "--key", k2, "--registry-keys", file, "--gate-name", "ledger-db")
	if !strings.Contains(out, "key ledger-1 now verify-only") {
		t.Fatalf("rotation did not say the old key stepped down:\n%s", out)
	}
	f, err := httpapi.LoadGateKeysFile(file)
	if err != nil {
		t.Fatalf("serve would not load what enroll wrote: %v", err)
	}
	form := f.Keys().Form()
	if len(form.Gates) != 2 || form.Gates[0].Gate != "ledger-db" || len(form.Gates[0].Keys) != 2 ||
		form.Gates[0].Keys[0].KeyID != "ledger-2" || form.Gates[0].Keys[0].State != "active" ||
		form.Gates[0].Keys[1].State != "verify-only" || form.Gates[0].Keys[1].SecretFile != "ledger-1.key" {
		t.Fatalf("gate keys: %+v", form)
	}
	b, _ := os.ReadFile(file)
	if strings.Contains(string(b), "secret\"") {
		t.Fatalf("the gate-keys file holds a secret:\n%s", b)
	}
	for name, args := range map[string][]string{
		"a verify-only key made active again": {"--key", k1, "--gate-name", "ledger-db", "--state", "active"},
		"another gate's key":                  {"--key", o1, "--gate-name", "ledger-db"},
	} {
		before, _ := os.ReadFile(file)
		if out, code := fencegate(t, append([]string{"gate", "enroll", "--registry-keys", file}, args...)...); code == 0 {
			t.Errorf("%s: accepted\n%s", name, out)
		}
		if after, _ := os.ReadFile(file); string(after) != string(before) {
			t.Errorf("%s: the file changed", name)
		}
	}
	mustRun(t, "gate", "enroll", "--key", k1, "--registry-keys", file, "--gate-name", "ledger-db", "--state", "retired")
}
