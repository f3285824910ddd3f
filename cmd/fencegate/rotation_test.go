// Proves key rotation end to end with trust-bundle distribution: a ledger
// gate polls the registry's GET /v1/trust-bundle; the operator adds k2
// (published signed by k1, fetched), switches the registry to k2 and marks
// k1 verify-only (published signed by k2, accepted because the gate
// already trusts k2), then retires k1. A grant issued under k1 before the
// switch keeps writing with fresh status proofs until k1 is retired;
// grants under k2 are accepted; and a gate left with the first bundle
// (the negative control: no distribution) rejects k2's grants.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/demo/ledger"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/wire"
)

// envelopeOf builds the write's envelope from a grant as issued and the
// latest status the registry gave for it.
func envelopeOf(is, st wire.Issued, op string, seq uint64, entries []ledger.Entry) *gate.Mutation {
	g := is.Grant
	return &gate.Mutation{Resource: g.Resource, Lease: g.Lease, OperationID: op, FenceToken: g.FenceToken, SegmentSeq: seq,
		PayloadDigest: ledger.PayloadDigest(entries), Grant: is.Grant.Encode(), GrantProof: is.GrantProof,
		Status: st.Status.Encode(), StatusProof: st.StatusProof}
}

func TestKeyRotationWithBundleDistribution(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts the registry")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "registry")
	tok := writeTokenFile(t, dir)
	port := freeAddr(t)
	serveArgs := []string{"--data-dir", data, "--listen", port, "--token-file", tok, "--unsafe-no-fsync", "--authz-open"}
	s := startServe(t, serveArgs...)
	dataBundle := filepath.Join(data, httpapi.BundleFileName)
	k1 := mustLoadBundle(t, dataBundle).File().Keys[0].KeyID

	gateBundle := filepath.Join(dir, "gate", "trust-bundle.json")
	copyDir(t, dataBundle, filepath.Join(dir, "static-bundle.json"))
	if err := os.MkdirAll(filepath.Dir(gateBundle), 0o755); err != nil {
		t.Fatal(err)
	}
	copyDir(t, dataBundle, gateBundle)
	fetched := startInProcess(t, ledgerReady, "demo", "ledger", "--db", filepath.Join(dir, "fetched.db"), "--token-file", tok,
		"--trust-bundle", gateBundle, "--trust-bundle-url", s.url, "--trust-bundle-interval", "50ms")
	static := startInProcess(t, ledgerReady, "demo", "ledger", "--db", filepath.Join(dir, "static.db"), "--token-file", tok,
		"--trust-bundle", filepath.Join(dir, "static-bundle.json"))
	waitVersion := func(want uint64) {
		t.Helper()
		for i := 0; i < 200; i++ {
			if b, err := grant.LoadBundle(gateBundle); err == nil && b.Version() == want {
				return
			}
			time.Sleep(25 * time.Millisecond)
		}
		t.Fatalf("the gate's bundle never reached version %d:\n%s", want, fetched.stderr)
	}
	ctx := context.Background()
	reg := func() *httpclient.Client {
		c, err := httpclient.NewClient(s.url, httpclient.WithBearerToken(serveToken))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	write := func(l *served, is wire.Issued, op string, seq uint64) error {
		t.Helper()
		st, err := reg().Status(ctx, is.Grant) // a fresh status proof, by the key signing now
		if err != nil {
			t.Fatal(err)
		}
		es := []ledger.Entry{{Key: fmt.Sprintf("row-%s-%d", op, seq), Value: "v"}}
		_, err = (&ledger.Client{Base: l.url, Token: serveToken}).Write(ctx, envelopeOf(is, st, op, seq, es), es)
		return err
	}

	// An in-flight grant under k1.
	old, err := reg().Acquire(ctx, wire.AcquireRequest{Resource: "rot/one", OperationID: "op-old", OperationClass: "settle", RequestID: "r-old", TTLMs: 60_000})
	if err != nil {
		t.Fatal(err)
	}
	if err := write(fetched, old, "op-old", 1); err != nil {
		t.Fatalf("k1 grant before the rotation: %v", err)
	}
	// A second grant under k1 that only probes when the gate verifies
	// with the retiring bundle: the gate persists a fetched bundle's file
	// before it installs it (bundlefetch), so the file at v4 does not yet
	// mean the gate refuses k1.
	probe, err := reg().Acquire(ctx, wire.AcquireRequest{Resource: "rot/probe", OperationID: "op-probe", OperationClass: "settle", RequestID: "r-probe", TTLMs: 60_000})
	if err != nil {
		t.Fatal(err)
	}
	// 1. Add k2; the registry publishes v2 signed by k1; the gate takes it.
	mustRun(t, "keys", "gen", "--id", "k2", "--out", filepath.Join(dir, "k2.key"))
	mustRun(t, "keys", "bundle", "add", "--bundle", dataBundle, "--key", filepath.Join(dir, "k2.key"))
	waitVersion(2)
	// 2. Switch the registry to k2; k1 verify-only (v3, signed by k2).
	s.stop()
	mustRun(t, "keys", "bundle", "verify-only", "--bundle", dataBundle, "--id", k1)
	s = startServe(t, append(serveArgs, "--key", filepath.Join(dir, "k2.key"))...)
	waitVersion(3)
	if err := write(fetched, old, "op-old", 2); err != nil {
		t.Fatalf("the in-flight k1 grant after the switch (k1 verify-only): %v", err)
	}
	// 3. Retire k1 (v4): the old grant's proof is rejected from now on.
	mustRun(t, "keys", "bundle", "retire", "--bundle", dataBundle, "--id", k1)
	waitVersion(4)
	for seq := uint64(1); ; seq++ {
		err := write(fetched, probe, "op-probe", seq)
		if errors.Is(err, gate.ErrBadProof) {
			break
		}
		if err != nil || seq == 200 {
			t.Fatalf("probe %d under k1 with v4 on the gate's disk: %v, want BAD_PROOF within 200 tries", seq, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
	if err := write(fetched, old, "op-old", 3); !errors.Is(err, gate.ErrBadProof) || !strings.Contains(err.Error(), "retired") {
		t.Fatalf("k1 grant after k1 retired: %v, want BAD_PROOF (key retired)", err)
	}
	if err := reg().Release(ctx, "rot/one", old.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	fresh, err := reg().Acquire(ctx, wire.AcquireRequest{Resource: "rot/one", OperationID: "op-new", OperationClass: "settle", RequestID: "r-new"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(fresh.GrantProof, "sig:k2:") {
		t.Fatalf("the registry signs with %s, want k2", fresh.GrantProof)
	}
	if err := write(fetched, fresh, "op-new", 1); err != nil {
		t.Fatalf("k2 grant at the updated gate: %v", err)
	}
	// Negative control: the gate that never got the new bundle.
	if err := write(static, fresh, "op-new", 1); !errors.Is(err, gate.ErrBadProof) {
		t.Fatalf("k2 grant at a gate with the first bundle: %v, want BAD_PROOF", err)
	}
}

func mustLoadBundle(t *testing.T, path string) *grant.Bundle {
	t.Helper()
	b, err := grant.LoadBundle(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// freeAddr picks a loopback address to reuse across restarts.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
