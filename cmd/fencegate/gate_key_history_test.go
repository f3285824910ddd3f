//go:build unix

// Proves, with real serve processes, that a gate key ID is used once,
// forever (issue 43's two-step resurrection): serve has gk-1 retired and
// gk-2 active; dropping gk-1 (SIGHUP) is loaded; bringing gk-1 back active
// with another secret and gk-2 verify-only (SIGHUP) is refused, logged
// with its code, and grants keep gk-2's proofs. Across a restart on the
// same data directory the file that brings gk-1 back does not start;
// across two replicas sharing one etcd, the replica that never had gk-1
// itself is refused by the history the other wrote. Negative controls:
// the same file on a store of its own (a fresh data directory; another
// etcd prefix) starts or reloads, and its grants carry gk-1's proofs under
// the new secret: what serve did before the history.
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/etcdstore"
	"github.com/fencegate/fencegate/wire"
)

// keyWorld is a folder of gate key files and the three gate-keys files of
// issue 43: F1 gk-1 retired, gk-2 active; F2 gk-1 dropped; F3 gk-1 active
// with another secret, gk-2 verify-only.
type keyWorld struct {
	dir   string
	files [3]string
}

func newKeyWorld(t *testing.T) *keyWorld {
	t.Helper()
	w := &keyWorld{dir: t.TempDir()}
	for _, k := range []struct{ id, file string }{{"gk-1", "gk-1.key"}, {"gk-2", "gk-2.key"}, {"gk-1", "gk-1-new.key"}} {
		sk, err := grant.GenerateKey(grant.AlgHMACSHA256, k.id, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(w.dir, k.file), sk.MarshalKeyFile(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	key := func(id, file, state string) string {
		return fmt.Sprintf(`{"keyId": %q, "secretFile": %q, "minEpoch": 1, "maxEpoch": 0, "state": %q}`, id, file, state)
	}
	gate := func(keys ...string) string {
		return `{"schema": "gateKeys.v1", "gates": [{"gate": "ledger-db", "resources": ["ledger/*"], "keys": [` + strings.Join(keys, ",") + `]}]}`
	}
	w.files = [3]string{
		gate(key("gk-1", "gk-1.key", "retired"), key("gk-2", "gk-2.key", "active")),
		gate(key("gk-2", "gk-2.key", "active")),
		gate(key("gk-1", "gk-1-new.key", "active"), key("gk-2", "gk-2.key", "verify-only")),
	}
	return w
}

// write puts gate-keys file n (0-based) at name in the world's folder and
// returns its path.
func (w *keyWorld) write(t *testing.T, name string, n int) string {
	t.Helper()
	p := filepath.Join(w.dir, name)
	if err := os.WriteFile(p, []byte(w.files[n]), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitLog waits until p's log holds msg at least n times.
func waitLog(t *testing.T, p *proc, msg string, n int) {
	t.Helper()
	for deadline := time.Now().Add(procWaitMax); strings.Count(p.err.String(), msg) < n; time.Sleep(20 * time.Millisecond) {
		select {
		case <-p.done:
			t.Fatalf("exited %d before logging %q %d times:\n%s", p.code, msg, n, p.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("never logged %q %d times:\n%s", msg, n, p.err)
		}
	}
}

func hup(t *testing.T, p *proc) {
	t.Helper()
	if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
}

// gateKeyOf acquires ledger/… at url and returns the key ID of
// ledger-db's gate proof on the grant.
func gateKeyOf(t *testing.T, url, requestID string) string {
	t.Helper()
	c, err := httpclient.NewClient(url, httpclient.WithBearerToken(serveToken))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), procWaitMax)
	defer cancel()
	is, err := c.Acquire(ctx, wire.AcquireRequest{Resource: "ledger/" + requestID, OperationID: "op", OperationClass: "settle", RequestID: requestID, TTLMs: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if len(is.GateProofs) != 1 || is.GateProofs[0].Gate != "ledger-db" {
		t.Fatalf("gate proofs %+v", is.GateProofs)
	}
	parts := strings.Split(is.GateProofs[0].GrantProof, ":")
	if len(parts) < 3 || parts[0] != "mac" {
		t.Fatalf("gate proof %q", is.GateProofs[0].GrantProof)
	}
	return parts[1]
}

const (
	keysLoaded  = `msg="gate keys loaded"`
	keysRefused = `msg="gate keys not reloaded: keeping the keys in force"`
)

func TestGateKeyResurrectionRefusedOnReloadAndRestart(t *testing.T) {
	w := newKeyWorld(t)
	keys := w.write(t, "gate-keys.json", 0)
	data := filepath.Join(t.TempDir(), "data")
	args := []string{"serve", "--data-dir", data, "--listen", "127.0.0.1:0", "--token-file", writeTokenFile(t, t.TempDir()),
		"--unsafe-no-fsync", "--authz-open", "--gate-keys", keys, "--gate-keys-poll-ms", "0"}
	s1 := startProc(t, args...)
	url := s1.waitOutput(t, listenLine)
	waitLog(t, s1, keysLoaded, 1)
	if got := gateKeyOf(t, url, "r1"); got != "gk-2" {
		t.Fatalf("F1: proofs under %s", got)
	}
	w.write(t, "gate-keys.json", 1)
	hup(t, s1)
	waitLog(t, s1, keysLoaded, 2) // dropping gk-1 is allowed
	w.write(t, "gate-keys.json", 2)
	hup(t, s1)
	waitLog(t, s1, keysRefused, 1)
	log := s1.err.String()
	if !strings.Contains(log, registry.KeyCodeOtherSecret) || !strings.Contains(log, "key gk-1") || !strings.Contains(log, "level=ERROR") {
		t.Fatalf("the refusal's log line:\n%s", log)
	}
	if got := gateKeyOf(t, url, "r2"); got != "gk-2" {
		t.Fatalf("after the refused reload: proofs under %s, want the keys in force (gk-2)", got)
	}
	if err := syscall.Kill(s1.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := s1.wait(t, "serve"); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, s1.err)
	}

	// Across a restart on the same data directory: refused at start.
	s2 := startProc(t, args...)
	if code := s2.wait(t, "serve with gk-1 back"); code == 0 || !strings.Contains(s2.err.String(), registry.KeyCodeOtherSecret) ||
		strings.Contains(s2.out.String(), "listening on") {
		t.Fatalf("a restart bringing gk-1 back: exit %d\n%s%s", code, s2.out, s2.err)
	}

	// Negative control: on a store of its own, the same file starts and
	// signs with the resurrected gk-1.
	args[2] = filepath.Join(t.TempDir(), "fresh")
	s3 := startProc(t, args...)
	url3 := s3.waitOutput(t, listenLine)
	if got := gateKeyOf(t, url3, "r3"); got != "gk-1" {
		t.Fatalf("negative control: a fresh store's serve signs with %s, want gk-1", got)
	}
}

func TestGateKeyResurrectionRefusedAcrossReplicas(t *testing.T) {
	dir := t.TempDir()
	em, err := etcdstore.StartEmbedded(context.Background(), filepath.Join(dir, "etcd"), etcdstore.EmbeddedOptions{UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	regKey, err := grant.GenerateKey(grant.AlgEd25519, "shared-key", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, "key.json")
	if err := os.WriteFile(keyPath, regKey.MarshalKeyFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := writeTokenFile(t, dir)
	w := newKeyWorld(t)
	replica := func(name, keys, prefix string) (*proc, string) {
		p := startProc(t, "serve", "--data-dir", filepath.Join(dir, name), "--listen", "127.0.0.1:0", "--token-file", tok, "--authz-open",
			"--etcd-endpoints", strings.Join(em.Endpoints(), ","), "--etcd-prefix", prefix, "--key", keyPath,
			"--gate-keys", keys, "--gate-keys-poll-ms", "0")
		url := p.waitOutput(t, listenLine)
		waitLog(t, p, keysLoaded, 1)
		return p, url
	}
	// Replica A: F1, then drops gk-1.
	keysA := w.write(t, "a.json", 0)
	a, _ := replica("a", keysA, "/fencegate/")
	w.write(t, "a.json", 1)
	hup(t, a)
	waitLog(t, a, keysLoaded, 2)

	// Replica B never had gk-1: it starts with F2, then brings gk-1 back.
	// Its own file-before check passes; the shared history refuses.
	keysB := w.write(t, "b.json", 1)
	b, urlB := replica("b", keysB, "/fencegate/")
	w.write(t, "b.json", 2)
	hup(t, b)
	waitLog(t, b, keysRefused, 1)
	if !strings.Contains(b.err.String(), registry.KeyCodeOtherSecret) {
		t.Fatalf("replica B's refusal:\n%s", b.err)
	}
	if got := gateKeyOf(t, urlB, "r1"); got != "gk-2" {
		t.Fatalf("replica B after the refused reload signs with %s, want gk-2", got)
	}

	// Negative control: the same steps on a store of its own (another
	// prefix of the same etcd) load, and grants carry gk-1's proofs.
	keysC := w.write(t, "c.json", 1)
	c, urlC := replica("c", keysC, "/other-registry/")
	w.write(t, "c.json", 2)
	hup(t, c)
	waitLog(t, c, keysLoaded, 2)
	if got := gateKeyOf(t, urlC, "r2"); got != "gk-1" {
		t.Fatalf("negative control: replica C signs with %s, want gk-1", got)
	}
}

// TestGateEnrollRefusesAFIFOAsTheGateKeysFile: enroll reads the
// registry's gate-keys file as serve does, so a FIFO there is refused at
// once, naming it, instead of stalling the command.
func TestGateEnrollRefusesAFIFOAsTheGateKeysFile(t *testing.T) {
	w := newKeyWorld(t)
	fifo := filepath.Join(w.dir, "gate-keys.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, code := fencegate(t, "gate", "enroll", "--key", filepath.Join(w.dir, "gk-2.key"), "--registry-keys", fifo, "--gate-name", "ledger-db", "--resources", "ledger/*")
	if code == 0 || !strings.Contains(out, fifo) || !strings.Contains(out, "FIFO") || time.Since(start) > 5*time.Second {
		t.Fatalf("a FIFO as --registry-keys: exit %d after %v\n%s", code, time.Since(start), out)
	}
}
