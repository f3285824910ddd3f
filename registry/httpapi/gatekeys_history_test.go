//go:build unix

// Proves a gate-keys file in force at a registry is checked against the
// registry's key history: the two-step resurrection of issue 43 (drop
// gk-1, then bring it back active with another secret and gk-2
// verify-only) is refused at the second reload, logged, and the keys in
// force stay (grants keep gk-2's proofs); a second GateKeysFile on the
// same store (a replica, or serve restarted) refuses to start with the
// resurrected file. Negative control: without the history bound (Admit
// never called), the same two reloads succeed and grants carry gk-1's
// proofs under the new secret. Also: a key file rewritten in place is
// noticed though the gate-keys file is unchanged (by a reload, as SIGHUP
// does, always; by a poll when the file was replaced or its size or time
// moved, and the rewrite that keeps all three is the poll's negative
// control); the gate-keys file and
// key files must be regular files of bounded size (a FIFO, /dev/zero and
// a 256 MiB file are refused at once, naming the path), and a refused
// FIFO leaves later reloads working.
package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/keptfile"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/testkit/fakeclock"
)

// issue43Files writes the three gate-keys files of issue 43 into dir:
// F1 gk-1 retired, gk-2 active; F2 gk-1 dropped; F3 gk-1 active with
// another secret (gk-1-new.key), gk-2 verify-only.
func issue43Files(t *testing.T) (dir string, files [3]string) {
	t.Helper()
	dir, _ = gateKeyDir(t, "gk-1", "gk-2")
	again, err := grant.GenerateKey(grant.AlgHMACSHA256, "gk-1", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gk-1-new.key"), again.MarshalKeyFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	key := func(id, file, state string) string {
		return `{"keyId": "` + id + `", "secretFile": "` + file + `", "minEpoch": 1, "maxEpoch": 0, "state": "` + state + `"}`
	}
	gate := func(keys ...string) string {
		return `{"schema": "gateKeys.v1", "gates": [{"gate": "ledger-db", "resources": ["ledger/*"], "keys": [` + strings.Join(keys, ",") + `]}]}`
	}
	files = [3]string{
		gate(key("gk-1", "gk-1.key", "retired"), key("gk-2", "gk-2.key", "active")),
		gate(key("gk-2", "gk-2.key", "active")),
		gate(key("gk-1", "gk-1-new.key", "active"), key("gk-2", "gk-2.key", "verify-only")),
	}
	return dir, files
}

// historyRegistry is a registry over store whose gate keys are f.
func historyRegistry(t *testing.T, store registry.Store, f *GateKeysFile) *registry.Registry {
	t.Helper()
	regKey, _ := grant.GenerateKey(grant.AlgEd25519, "reg", rand.Reader)
	clock := fakeclock.New(time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC))
	reg, err := registry.New(store, registry.DefaultConfig(1), clock, regKey, registry.WithGateProofs(f))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// signsWith is the key ID of the gate proof f's keys make for ledger/1.
func signsWith(t *testing.T, f *GateKeysFile) string {
	t.Helper()
	g := &grant.Grant{Resource: "ledger/1", Owner: "w", RequestID: "r", Lease: "l", OperationRoot: grant.OperationRoot("ledger/1", "op"),
		OperationClass: "settle", FenceToken: 1, BackendRevision: 1, IssuerEpoch: 1, TTLMs: 1000,
		IssuedAt: time.UnixMilli(1_700_000_000_000).UTC(), ExpiresAt: time.UnixMilli(1_700_000_001_000).UTC()}
	ps, err := f.GateProofs("ledger/1", g, nil)
	if err != nil || len(ps) != 1 {
		t.Fatalf("gate proofs %+v %v", ps, err)
	}
	return strings.Split(ps[0].GrantProof, ":")[1]
}

func TestGateKeysTwoStepResurrectionRefused(t *testing.T) {
	ctx := context.Background()
	for _, history := range []bool{true, false} {
		dir, files := issue43Files(t)
		path := writeGateKeys(t, dir, files[0])
		f, err := LoadGateKeysFile(path)
		if err != nil {
			t.Fatal(err)
		}
		store := memstore.New()
		reg := historyRegistry(t, store, f)
		if history {
			if _, err := f.Admit(ctx, reg); err != nil {
				t.Fatal(err)
			}
		}
		writeGateKeys(t, dir, files[1])
		if changed, err := f.Reload(ctx); !changed || err != nil {
			t.Fatalf("history %v: dropping gk-1: %v %v", history, changed, err)
		}
		writeGateKeys(t, dir, files[2])
		changed, err := f.Reload(ctx)
		if !history {
			// Negative control: the file-before check alone lets it in.
			if !changed || err != nil || signsWith(t, f) != "gk-1" {
				t.Fatalf("negative control: the resurrection was refused without the history: %v %v", changed, err)
			}
			continue
		}
		var he *registry.KeyHistoryError
		if changed || !errors.As(err, &he) || he.Refusals[0].Code != registry.KeyCodeOtherSecret || !strings.Contains(err.Error(), path) {
			t.Fatalf("the resurrection: %v %v, want %s naming the file", changed, err, registry.KeyCodeOtherSecret)
		}
		if got := signsWith(t, f); got != "gk-2" {
			t.Fatalf("the keys in force changed: proofs under %s", got)
		}
		// The same store after a restart (or a replica's): the file that
		// brings gk-1 back does not start.
		f2, err := LoadGateKeysFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f2.Admit(ctx, historyRegistry(t, store, f2)); !errors.Is(err, registry.ErrKeyReused) {
			t.Fatalf("a restart with the resurrected file: %v", err)
		}
		// And a replica that never saw gk-1 itself, starting with F2 and
		// reloading F3, is refused by the history the first wrote.
		writeGateKeys(t, dir, files[1])
		f3, err := LoadGateKeysFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f3.Admit(ctx, historyRegistry(t, store, f3)); err != nil {
			t.Fatalf("a replica starting with F2: %v", err)
		}
		writeGateKeys(t, dir, files[2])
		if _, err := f3.Reload(ctx); !errors.Is(err, registry.ErrKeyReused) {
			t.Fatalf("a replica reloading F3: %v", err)
		}
	}
}

func TestGateKeysReloadRefusalIsLoggedWithItsCode(t *testing.T) {
	dir, files := issue43Files(t)
	path := writeGateKeys(t, dir, files[1])
	f, err := LoadGateKeysFile(path)
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	if _, err := admitFile(t, store, files[0], dir); err != nil { // gk-1 known, then dropped by f's Admit
		t.Fatal(err)
	}
	if _, err := f.Admit(context.Background(), historyRegistry(t, store, f)); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal, 1)
	done := make(chan struct{})
	go func() { defer close(done); f.Watch(ctx, 0, hup, slog.New(slog.NewTextHandler(&logs, nil))) }()
	writeGateKeys(t, dir, files[2])
	hup <- syscall.SIGHUP
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.text(), "gate keys not reloaded") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if out := logs.text(); !strings.Contains(out, registry.KeyCodeOtherSecret) || !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "gk-1") {
		t.Fatalf("logs:\n%s", out)
	}
}

// admitFile admits the gate keys body (relative to dir) into store's
// history, as a replica with that file in force did.
func admitFile(t *testing.T, store registry.Store, body, dir string) (registry.KeyAdmission, error) {
	t.Helper()
	gk, err := ParseGateKeys([]byte(body), dir)
	if err != nil {
		t.Fatal(err)
	}
	return registry.AdmitGateKeys(context.Background(), store, gk.Uses())
}

func TestGateKeysKeyFileRewrittenInPlaceIsNoticed(t *testing.T) {
	ctx := context.Background()
	dir, files := issue43Files(t)
	path := writeGateKeys(t, dir, files[0])
	f, err := LoadGateKeysFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Admit(ctx, historyRegistry(t, memstore.New(), f)); err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, "gk-2.key")
	orig, _ := os.ReadFile(keyPath)
	other, _ := grant.GenerateKey(grant.AlgHMACSHA256, "gk-2", rand.Reader)
	if err := os.WriteFile(keyPath, other.MarshalKeyFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	// The gate-keys file is byte for byte the one in force: a check of
	// its bytes alone (serve's before) sees no change.
	b, _ := os.ReadFile(path)
	if sum := sha256.Sum256(b); "sha256:"+hex.EncodeToString(sum[:]) != f.Keys().Digest() {
		t.Fatal("the gate-keys file changed")
	}
	if changed, err := f.Reload(ctx); changed || !errors.Is(err, ErrBadGateKeys) || !strings.Contains(err.Error(), "gk-2") {
		t.Fatalf("gk-2.key rewritten in place: %v %v, want refused", changed, err)
	}
	if err := os.WriteFile(keyPath, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := f.Reload(ctx); changed || err != nil {
		t.Fatalf("gk-2.key back as it was: %v %v, want no change", changed, err)
	}
}

func TestGateKeysPollSeesAKeyFileReplaced(t *testing.T) {
	ctx := context.Background()
	dir, files := issue43Files(t)
	path := writeGateKeys(t, dir, files[0])
	f, err := LoadGateKeysFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := f.Poll(ctx); changed || err != nil {
		t.Fatalf("nothing changed: %v %v", changed, err)
	}
	keyPath := filepath.Join(dir, "gk-2.key")
	orig, _ := os.ReadFile(keyPath)
	st, _ := os.Stat(keyPath)
	other, _ := grant.GenerateKey(grant.AlgHMACSHA256, "gk-2", rand.Reader)
	if len(other.MarshalKeyFile()) != len(orig) {
		t.Fatal("key files of one ID differ in length")
	}
	// Replaced by a rename (a ConfigMap's or Secret's swap), same size
	// and time: the poll sees another file.
	tmp := keyPath + ".new"
	if err := os.WriteFile(tmp, other.MarshalKeyFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, keyPath); err != nil {
		t.Fatal(err)
	}
	if changed, err := f.Poll(ctx); changed || !errors.Is(err, ErrBadGateKeys) {
		t.Fatalf("gk-2.key replaced: poll %v %v, want refused", changed, err)
	}
	// Back as it was (a reload reads it: unchanged), then rewritten in
	// place keeping size, time and inode: the poll cannot tell; a reload
	// (SIGHUP) reads it and refuses.
	if err := os.WriteFile(keyPath, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := f.Reload(ctx); changed || err != nil {
		t.Fatalf("gk-2.key back: %v %v", changed, err)
	}
	st, _ = os.Stat(keyPath)
	if err := os.WriteFile(keyPath, other.MarshalKeyFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(keyPath, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if changed, err := f.Poll(ctx); changed || err != nil {
		t.Fatalf("negative control: a poll saw a rewrite keeping size, time and inode: %v %v", changed, err)
	}
	if changed, err := f.Reload(ctx); changed || !errors.Is(err, ErrBadGateKeys) {
		t.Fatalf("the same rewrite on reload: %v %v, want refused", changed, err)
	}
}

func TestGateKeysFilesMustBeSmallRegularFiles(t *testing.T) {
	ctx := context.Background()
	dir, files := issue43Files(t)
	path := writeGateKeys(t, dir, files[0])
	f, err := LoadGateKeysFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.key")
	fh, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(256 << 20); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	if _, err := LoadGateKeysFile(fifo); !errors.Is(err, keptfile.ErrNotRegular) || !strings.Contains(err.Error(), fifo) {
		t.Fatalf("a FIFO as the gate-keys file: %v", err)
	}
	for _, c := range []struct {
		secretFile string
		want       error
	}{{fifo, keptfile.ErrNotRegular}, {"/dev/zero", keptfile.ErrNotRegular}, {dir, keptfile.ErrNotRegular}, {huge, keptfile.ErrTooLarge}} {
		writeGateKeys(t, dir, strings.Replace(files[0], `"secretFile": "gk-2.key"`, `"secretFile": "`+c.secretFile+`"`, 1))
		start := time.Now()
		changed, err := f.Reload(ctx)
		if changed || !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.secretFile) {
			t.Errorf("secretFile %s: %v %v, want %v naming it", c.secretFile, changed, err, c.want)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("secretFile %s: refused after %v", c.secretFile, took)
		}
	}
	// Nothing stalled: the next good reload goes through.
	writeGateKeys(t, dir, files[1])
	if changed, err := f.Reload(ctx); !changed || err != nil {
		t.Fatalf("a good reload after the refusals: %v %v", changed, err)
	}
}
