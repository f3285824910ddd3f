// Examples of the grant API: sign and verify a grant, and what a rejection
// looks like to a caller that branches on it.
package grant_test

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/grant"
)

func Example() {
	// A registry's key (fixed seed so the output is stable; use GenerateKey).
	key, _ := grant.NewSigningKey(grant.AlgEd25519, "k1", bytes.Repeat([]byte{7}, 32))
	bundle, _ := grant.NewBundle(grant.BundleFile{Version: 1, Keys: []grant.BundleKey{{
		KeyID: "k1", Alg: grant.AlgEd25519, PublicKey: grant.EncodeKey(key.PublicKey()),
		MinEpoch: 1, State: grant.KeyActive,
	}}}, "")
	verifier := grant.NewVerifier(bundle, 0)

	at := time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)
	g := &grant.Grant{
		Resource: "invoice-batch/2026-07-19", Owner: "worker-settlement-7",
		RequestID: "req-1", Lease: "lease-91",
		OperationRoot:  grant.OperationRoot("invoice-batch/2026-07-19", "settle-1"),
		OperationClass: "settle", FenceToken: 8842, BackendRevision: 1920184,
		PolicyGeneration: 12, IssuerEpoch: 37, TTLMs: 10000,
		IssuedAt: at, ExpiresAt: at.Add(10 * time.Second),
	}
	proof, _ := key.Sign(g)

	// The gate receives bytes, parses them strictly and verifies.
	received, _ := grant.ParseGrant(g.Encode())
	fmt.Println("verify:", verifier.Verify(received, proof))

	received.FenceToken = 1 << 62 // a forged huge fence
	err := verifier.Verify(received, proof)
	fmt.Println("forged:", grant.CodeOf(err), errors.Is(err, grant.ErrBadSignature))
	// Output:
	// verify: <nil>
	// forged: BAD_SIGNATURE true
}

func ExampleParseGrant_rejection() {
	at := time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)
	g := &grant.Grant{
		Resource: "invoices/2026", Owner: "worker-7", RequestID: "req-1", Lease: "lease-1",
		OperationRoot: grant.OperationRoot("invoices/2026", "op-1"), OperationClass: "settle",
		FenceToken: 41, BackendRevision: 9, IssuerEpoch: 1, TTLMs: 5000,
		IssuedAt: at, ExpiresAt: at.Add(5 * time.Second),
	}
	b := bytes.Replace(g.Encode(), []byte("fenceToken: 41"), []byte("fenceToken: 041"), 1)
	_, err := grant.ParseGrant(b)
	var fe *grant.FieldError
	if errors.As(err, &fe) {
		fmt.Println(grant.CodeOf(err), fe.Field, "-", fe.Reason)
	}
	// Output:
	// MALFORMED fenceToken - leading zero
}
