// This file proves the registry's key per gate: a gate-keys file is
// refused for every malformed form; each answer carrying a grant (acquire,
// renew, status) carries, for each gate whose resources cover it, that
// gate's MAC of the grant and of the status, which verifies under that
// gate's key and under no other gate's (the negative control); a gate with
// no active key gets none; a reload rotates, and a reload that undoes a
// rotation step or changes a key's material (a key file rewritten in
// place, the gate-keys file untouched, included) is refused with the keys
// in force kept; no log line carries a secret. gatekeys_history_test.go
// has the key history and the key files' bounds.
package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/wire"
)

// gateKeyDir writes an HMAC key file per ID into a new folder.
func gateKeyDir(t *testing.T, ids ...string) (string, map[string]*grant.SigningKey) {
	t.Helper()
	dir := t.TempDir()
	keys := map[string]*grant.SigningKey{}
	for _, id := range ids {
		k, err := grant.GenerateKey(grant.AlgHMACSHA256, id, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, id+".key"), k.MarshalKeyFile(), 0o600); err != nil {
			t.Fatal(err)
		}
		keys[id] = k
	}
	return dir, keys
}

func writeGateKeys(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "gate-keys.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGateKeysFileRefusesBadForms(t *testing.T) {
	dir, _ := gateKeyDir(t, "k1", "k2")
	ed, _ := grant.GenerateKey(grant.AlgEd25519, "ed", rand.Reader)
	if err := os.WriteFile(filepath.Join(dir, "ed.key"), ed.MarshalKeyFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	key := func(id, state string) string {
		return `{"keyId": "` + id + `", "secretFile": "` + id + `.key", "minEpoch": 1, "maxEpoch": 0, "state": "` + state + `"}`
	}
	gate := func(name, res string, keys ...string) string {
		return `{"gate": "` + name + `", "resources": [` + res + `], "keys": [` + strings.Join(keys, ",") + `]}`
	}
	file := func(gates ...string) string {
		return `{"schema": "gateKeys.v1", "gates": [` + strings.Join(gates, ",") + `]}`
	}
	good := file(gate("a", `"inv/*"`, key("k1", "active"), key("k2", "verify-only")))
	if _, err := ParseGateKeys([]byte(good), dir); err != nil {
		t.Fatalf("a good file: %v", err)
	}
	for name, body := range map[string]string{
		"schema":                  strings.Replace(good, "gateKeys.v1", "gateKeys.v2", 1),
		"unknown field":           strings.Replace(good, `"gates"`, `"gatez"`, 1),
		"gate named twice":        file(gate("a", `"inv/*"`, key("k1", "active")), gate("a", `"x/*"`, key("k2", "active"))),
		"key in two gates":        file(gate("a", `"inv/*"`, key("k1", "active")), gate("b", `"x/*"`, key("k1", "active"))),
		"two active keys":         file(gate("a", `"inv/*"`, key("k1", "active"), key("k2", "active"))),
		"no resources":            file(gate("a", ``, key("k1", "active"))),
		"bad resource pattern":    file(gate("a", `"inv/*/x"`, key("k1", "active"))),
		"no keys":                 file(gate("a", `"inv/*"`)),
		"bad state":               file(gate("a", `"inv/*"`, key("k1", "revoked"))),
		"bad gate name":           file(gate("a b", `"inv/*"`, key("k1", "active"))),
		"missing key file":        file(gate("a", `"inv/*"`, key("k3", "active"))),
		"an Ed25519 key file":     file(gate("a", `"inv/*"`, key("ed", "active"))),
		"epochs":                  strings.Replace(good, `"minEpoch": 1`, `"minEpoch": 0`, 1),
		"key file of another key": strings.Replace(good, `"secretFile": "k1.key"`, `"secretFile": "k2.key"`, 1),
	} {
		if _, err := ParseGateKeys([]byte(body), dir); !errors.Is(err, ErrBadGateKeys) {
			t.Errorf("%s: %v, want ErrBadGateKeys", name, err)
		}
	}
}

// gateWorld is a registry with gate keys behind a real server.
type gateWorld struct {
	clock *fakeclock.Clock
	alice *httpclient.Client
	keys  map[string]*grant.SigningKey
	file  *GateKeysFile
	path  string
}

const gateWorldKeys = `{"schema": "gateKeys.v1", "gates": [
  {"gate": "ledger-db", "resources": ["inv/ledger/*"], "keys": [{"keyId": "ledger-1", "secretFile": "ledger-1.key", "minEpoch": 1, "maxEpoch": 0, "state": "active"}]},
  {"gate": "all-db", "resources": ["inv/*"], "keys": [{"keyId": "all-1", "secretFile": "all-1.key", "minEpoch": 1, "maxEpoch": 0, "state": "active"}]},
  {"gate": "gone-db", "resources": ["*"], "keys": [{"keyId": "gone-1", "secretFile": "gone-1.key", "minEpoch": 1, "maxEpoch": 0, "state": "verify-only"}]},
  {"gate": "later-db", "resources": ["*"], "keys": [{"keyId": "later-1", "secretFile": "later-1.key", "minEpoch": 2, "maxEpoch": 0, "state": "active"}]}]}`

func newGateWorld(t *testing.T) *gateWorld {
	t.Helper()
	dir, keys := gateKeyDir(t, "ledger-1", "ledger-2", "all-1", "gone-1", "later-1")
	w := &gateWorld{clock: fakeclock.New(time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)), keys: keys, path: writeGateKeys(t, dir, gateWorldKeys)}
	var err error
	if w.file, err = LoadGateKeysFile(w.path); err != nil {
		t.Fatal(err)
	}
	regKey, _ := grant.GenerateKey(grant.AlgEd25519, "reg", rand.Reader)
	reg, err := registry.New(newTestStore(t), registry.DefaultConfig(1), w.clock, regKey, registry.WithGateProofs(w.file))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.file.Admit(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	tokens, _ := ParseTokenFile([]byte(tokenTable))
	policy, _ := ParsePolicy([]byte(harnessPolicy))
	srv, err := NewServer(Config{Registry: reg, Auth: tokens, Authorizer: policy, Metrics: NewMetrics(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	if w.alice, err = httpclient.NewClient(hs.URL, httpclient.WithHTTPClient(hs.Client()), httpclient.WithBearerToken(tokAlice)); err != nil {
		t.Fatal(err)
	}
	return w
}

// verifierOf checks proofs under one HMAC key only: what that gate holds.
func verifierOf(t *testing.T, k *grant.SigningKey) *grant.Verifier {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.key"), k.MarshalKeyFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := grant.NewBundle(grant.BundleFile{Version: 1, Keys: []grant.BundleKey{{KeyID: k.KeyID, Alg: grant.AlgHMACSHA256, SecretFile: "k.key", MinEpoch: 1, State: grant.KeyActive}}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	return grant.NewVerifier(b, -1)
}

// checkGateProofs requires is to carry exactly the named gates' pairs,
// each verifying under its own key (gate → key ID).
func (w *gateWorld) checkGateProofs(t *testing.T, is wire.Issued, want [][2]string) {
	t.Helper()
	if len(is.GateProofs) != len(want) {
		t.Fatalf("%s: gate proofs %+v, want gates %v", is.Grant.Resource, is.GateProofs, want)
	}
	for i, p := range is.GateProofs {
		if p.Gate != want[i][0] {
			t.Fatalf("gate proof %d is %s's, want %s's", i, p.Gate, want[i][0])
		}
		v := verifierOf(t, w.keys[want[i][1]])
		if err := v.Verify(is.Grant, p.GrantProof); err != nil {
			t.Errorf("%s's grant proof under its key: %v", p.Gate, err)
		}
		switch {
		case is.Status == nil && p.StatusProof != "":
			t.Errorf("%s: a status proof beside a grant that is its own HELD statement", p.Gate)
		case is.Status != nil:
			if err := v.Verify(is.Status, p.StatusProof); err != nil {
				t.Errorf("%s's status proof under its key: %v", p.Gate, err)
			}
		}
	}
}

func TestAnswersCarryTheProofsOfEachGateCoveringTheResource(t *testing.T) {
	w := newGateWorld(t)
	ctx := context.Background()
	a, err := w.alice.Acquire(ctx, wire.AcquireRequest{Resource: "inv/ledger/1", OperationID: "op", OperationClass: "settle", RequestID: "r-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.GrantProof, "sig:reg:") {
		t.Fatalf("the registry's own proof is %q", a.GrantProof)
	}
	// gone-db has no active key; later-db's key starts at epoch 2.
	w.checkGateProofs(t, a, [][2]string{{"all-db", "all-1"}, {"ledger-db", "ledger-1"}})

	// Negative control: one gate's pair does not verify under another
	// gate's key, for the same grant.
	if err := verifierOf(t, w.keys["all-1"]).Verify(a.Grant, a.GateProofs[1].GrantProof); !errors.Is(err, grant.ErrUnknownKey) {
		t.Fatalf("ledger-db's proof under all-db's key: %v, want UNKNOWN_KEY", err)
	}
	forged, _ := grant.NewSigningKey(grant.AlgHMACSHA256, "ledger-1", bytes.Repeat([]byte{7}, 32))
	p, _ := forged.Sign(a.Grant)
	if err := verifierOf(t, w.keys["ledger-1"]).Verify(a.Grant, p); !errors.Is(err, grant.ErrBadSignature) {
		t.Fatalf("a proof under ledger-1's ID with another secret: %v, want BAD_SIGNATURE", err)
	}

	w.clock.Advance(time.Second)
	r, err := w.alice.Renew(ctx, "inv/ledger/1", a.Grant.Lease)
	if err != nil {
		t.Fatal(err)
	}
	w.checkGateProofs(t, r, [][2]string{{"all-db", "all-1"}, {"ledger-db", "ledger-1"}})
	s, err := w.alice.Status(ctx, a.Grant)
	if err != nil {
		t.Fatal(err)
	}
	w.checkGateProofs(t, s, [][2]string{{"all-db", "all-1"}, {"ledger-db", "ledger-1"}})

	b, err := w.alice.Acquire(ctx, wire.AcquireRequest{Resource: "inv/other", OperationID: "op", OperationClass: "settle", RequestID: "r-2"})
	if err != nil {
		t.Fatal(err)
	}
	w.checkGateProofs(t, b, [][2]string{{"all-db", "all-1"}})
}

func TestGateKeysReloadRotatesAndRefusesRollback(t *testing.T) {
	w := newGateWorld(t)
	ctx := context.Background()
	rotated := strings.Replace(gateWorldKeys, `"keys": [{"keyId": "ledger-1", "secretFile": "ledger-1.key", "minEpoch": 1, "maxEpoch": 0, "state": "active"}]`,
		`"keys": [{"keyId": "ledger-2", "secretFile": "ledger-2.key", "minEpoch": 1, "maxEpoch": 0, "state": "active"},
		          {"keyId": "ledger-1", "secretFile": "ledger-1.key", "minEpoch": 1, "maxEpoch": 0, "state": "verify-only"}]`, 1)
	writeGateKeys(t, filepath.Dir(w.path), rotated)
	if changed, err := w.file.Reload(ctx); !changed || err != nil {
		t.Fatalf("rotation: %v %v", changed, err)
	}
	a, err := w.alice.Acquire(ctx, wire.AcquireRequest{Resource: "inv/ledger/2", OperationID: "op", OperationClass: "settle", RequestID: "r-1"})
	if err != nil {
		t.Fatal(err)
	}
	w.checkGateProofs(t, a, [][2]string{{"all-db", "all-1"}, {"ledger-db", "ledger-2"}})
	inForce := w.file.Keys().Digest()

	back := strings.Replace(strings.Replace(rotated, `"state": "verify-only"}]`, `"state": "active"}]`, 1), `"ledger-2.key", "minEpoch": 1, "maxEpoch": 0, "state": "active"`, `"ledger-2.key", "minEpoch": 1, "maxEpoch": 0, "state": "retired"`, 1)
	other, _ := grant.GenerateKey(grant.AlgHMACSHA256, "ledger-2", rand.Reader)
	for name, edit := range map[string]func(){
		"a verify-only key made active again": func() { writeGateKeys(t, filepath.Dir(w.path), back) },
		"a key's material changed": func() {
			writeGateKeys(t, filepath.Dir(w.path), rotated) // the bytes in force: only the key file changes
			if err := os.WriteFile(filepath.Join(filepath.Dir(w.path), "ledger-2.key"), other.MarshalKeyFile(), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"not JSON": func() { writeGateKeys(t, filepath.Dir(w.path), rotated[:40]) },
	} {
		edit()
		if changed, err := w.file.Reload(ctx); changed || !errors.Is(err, ErrBadGateKeys) && !strings.Contains(name, "JSON") || err == nil {
			t.Errorf("%s: changed %v, %v; want refused", name, changed, err)
		}
		if w.file.Keys().Digest() != inForce {
			t.Errorf("%s: the keys in force changed", name)
		}
	}
}

func TestGateKeysWatchLogsNoSecret(t *testing.T) {
	w := newGateWorld(t)
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal, 1)
	done := make(chan struct{})
	go func() { defer close(done); w.file.Watch(ctx, 0, hup, logger) }()
	writeGateKeys(t, filepath.Dir(w.path), strings.Replace(gateWorldKeys, `"inv/*"`, `"inv/x/*"`, 1))
	deadline := time.Now().Add(10 * time.Second)
	waitFor := func(msg string) {
		for !strings.Contains(logs.text(), msg) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	hup <- os.Interrupt
	waitFor("gate keys loaded")
	writeGateKeys(t, filepath.Dir(w.path), "{")
	hup <- os.Interrupt
	waitFor("gate keys not reloaded")
	cancel()
	<-done
	out := logs.text()
	if !strings.Contains(out, "gate keys loaded") || !strings.Contains(out, "gate keys not reloaded") {
		t.Fatalf("logs:\n%s", out)
	}
	for id, k := range w.keys {
		var kf struct{ Secret string }
		if err := json.Unmarshal(k.MarshalKeyFile(), &kf); err != nil || kf.Secret == "" {
			t.Fatal(err)
		}
		if strings.Contains(out, kf.Secret) {
			t.Errorf("the log names key material of %s:\n%s", id, out)
		}
	}
}

func (l *lockedBuffer) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
