// This file proves the JSON envelope round-trips and that its decoder is
// strict: unknown, duplicate or re-cased fields, trailing data and invalid
// envelopes are all MALFORMED; FuzzDecodeMutation checks it never panics,
// accepts no duplicate, re-cased or trailing data (by an independent key
// walker) and that whatever it accepts re-encodes to an equal mutation
// (FuzzAuthenticate, in envelope_fuzz_test.go, judges what it accepts).
package gate_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/jsonkeys"
)

func genuineJSON(t testing.TB) []byte {
	b, err := json.Marshal(gatetest.NewIssuer("main").Mutation(writerA(5), 1, "p"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMutationJSONRoundTrip(t *testing.T) {
	m := gatetest.NewIssuer("main").Mutation(writerA(5), 1, "p")
	b, _ := json.Marshal(m)
	var back gate.Mutation
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*m, back) {
		t.Fatalf("round trip:\n%+v\n%+v", *m, back)
	}
}

func TestDecodeMutationStrict(t *testing.T) {
	good := string(genuineJSON(t))
	for name, in := range map[string]string{
		"unknown field":   strings.Replace(good, `{`, `{"extra":1,`, 1),
		"duplicate field": strings.Replace(good, `{`, `{"lease":"lease-a",`, 1),
		"re-cased field":  strings.Replace(good, `"lease"`, `"Lease"`, 1),
		"trailing data":   good + "{}",
		"not an object":   `[1]`,
		"negative fence":  strings.Replace(good, `"fenceToken":5`, `"fenceToken":-5`, 1),
		"fraction fence":  strings.Replace(good, `"fenceToken":5`, `"fenceToken":5.0`, 1),
		"zero seq":        strings.Replace(good, `"segmentSeq":1`, `"segmentSeq":0`, 1),
		"upper digest":    strings.Replace(good, `"payloadDigest":"sha256:`, `"payloadDigest":"SHA256:`, 1),
		"too big":         strings.Replace(good, `"lease-a"`, `"`+strings.Repeat("x", gate.MutationJSONBytesMax)+`"`, 1),
	} {
		if _, err := gate.DecodeMutation([]byte(in)); !errors.Is(err, gate.ErrMalformed) {
			t.Errorf("%s: got %v, want MALFORMED", name, err)
		}
	}
	if _, err := gate.DecodeMutation([]byte(good)); err != nil {
		t.Fatal(err)
	}
}

// mutationJSONNames are the envelope wire form's field names, exactly.
var mutationJSONNames = map[string]bool{
	"resource": true, "lease": true, "operationId": true, "fenceToken": true, "segmentSeq": true,
	"payloadDigest": true, "grant": true, "grantProof": true, "status": true, "statusProof": true,
	"gateProofs": true, "gate": true, // gateProofs' members: gate, grantProof, statusProof
}

// withGateProofs is m with two gates' proof pairs (shape only).
func withGateProofs(m *gate.Mutation) *gate.Mutation {
	c := *m
	c.GateProofs = []grant.GateProof{{Gate: "ledger-db", GrantProof: "mac:ledger-1:" + strings.Repeat("A", 43), StatusProof: "mac:ledger-1:" + strings.Repeat("B", 43)},
		{Gate: "other-db", GrantProof: "mac:other-1:x", StatusProof: "mac:other-1:y"}}
	return &c
}

func TestMutationJSONGateProofs(t *testing.T) {
	m := withGateProofs(gatetest.NewIssuer("main").Mutation(writerA(5), 1, "p"))
	b, _ := json.Marshal(m)
	back, err := gate.DecodeMutation(b)
	if err != nil || !reflect.DeepEqual(m, back) {
		t.Fatalf("round trip: %v\n%+v\n%+v", err, m, back)
	}
	plain, _ := json.Marshal(gatetest.NewIssuer("main").Mutation(writerA(5), 1, "p"))
	if strings.Contains(string(plain), "gateProofs") {
		t.Fatalf("an envelope without gate proofs names them: %s", plain)
	}
	good := string(b)
	nine := *m
	for i := range 7 {
		nine.GateProofs = append(nine.GateProofs, grant.GateProof{Gate: fmt.Sprint("g", i), GrantProof: "p", StatusProof: "s"})
	}
	nineJSON, _ := json.Marshal(nine)
	noStatus := *m
	noStatus.Status, noStatus.StatusProof = nil, ""
	noStatusJSON, _ := json.Marshal(noStatus)
	for name, in := range map[string]string{
		"unknown member":         strings.Replace(good, `{"gate":"ledger-db"`, `{"key":1,"gate":"ledger-db"`, 1),
		"duplicate member":       strings.Replace(good, `{"gate":"ledger-db"`, `{"gate":"x","gate":"ledger-db"`, 1),
		"re-cased member":        strings.Replace(good, `{"gate":"ledger-db"`, `{"Gate":"ledger-db"`, 1),
		"not an array":           strings.Replace(good, `"gateProofs":[`, `"gateProofs":{"a":[`, 1) + "}",
		"gate named twice":       strings.Replace(good, `"other-db"`, `"ledger-db"`, 1),
		"bad gate name":          strings.Replace(good, `"other-db"`, `"other db"`, 1),
		"empty grant proof":      strings.Replace(good, `"mac:other-1:x"`, `""`, 1),
		"missing statusProof":    strings.Replace(good, `,"statusProof":"mac:other-1:y"`, ``, 1),
		"nine gates":             string(nineJSON),
		"statusProof, no status": string(noStatusJSON),
		"proof too long":         strings.Replace(good, `"mac:other-1:x"`, `"`+strings.Repeat("x", gate.ProofBytesMax+1)+`"`, 1),
	} {
		if _, err := gate.DecodeMutation([]byte(in)); !errors.Is(err, gate.ErrMalformed) {
			t.Errorf("%s: got %v, want MALFORMED", name, err)
		}
	}
}

func FuzzDecodeMutation(f *testing.F) {
	f.Add(genuineJSON(f))
	f.Add([]byte(`{}`))
	gp, _ := json.Marshal(withGateProofs(gatetest.NewIssuer("main").Mutation(writerA(5), 1, "p")))
	f.Add(gp)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := gate.DecodeMutation(b)
		if err != nil {
			if !errors.Is(err, gate.ErrMalformed) {
				t.Fatalf("error not MALFORMED: %v", err)
			}
			return
		}
		if p := jsonkeys.Problem(b, mutationJSONNames); p != "" {
			t.Fatalf("accepted a mutation with a %s:\n%s", p, b)
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := gate.DecodeMutation(again)
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-encode: %v\n%+v\n%+v", err, m, m2)
		}
	})
}
