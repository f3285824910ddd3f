// This file proves the one JSON form of receipts and answers: what the
// gate decides round-trips exactly (accepts, and the unstored receipt of
// a shadow-mode rejection); what the forms it replaced wrote decodes and
// is written back byte for byte; the decoders refuse unknown, duplicate and
// re-cased fields, trailing data, invalid fields, an altered receipt
// (its id no longer the digest of its fields) and an answer whose
// receipts contradict its verdict; FuzzDecodeReceipt and
// FuzzDecodeAnswer check the same for any input.
// Seed corpus: testdata/fuzz/FuzzDecodeReceipt/, FuzzDecodeAnswer/. Run:
// go test ./gate -run '^$' -fuzz '^FuzzDecodeReceipt$' -parallel 2
package gate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/testkit/jsonkeys"
)

// decidedReceipts are receipts as the gate makes them: the accepts of
// segments 1 and 2 of op-a under fence 5, and the unstored receipt that
// shadow mode returns for a stale segment it let through.
func decidedReceipts(t testing.TB) (accepts []gate.Receipt, shadow gate.Receipt) {
	f := newFixture(t)
	st := gate.FenceState{Resource: res, Mode: gate.ModeEnforce}
	for seq := uint64(1); seq <= 2; seq++ {
		m := f.iss.Mutation(writerA(5), seq, "p"+string(rune('0'+seq)))
		d := decideOn(t, f, m, st)
		if d.Outcome != gate.Accepted {
			t.Fatalf("segment %d: %v", seq, d.Err)
		}
		accepts, st = append(accepts, d.Receipt), d.State
	}
	st.Mode = gate.ModeShadow
	m := f.iss.Mutation(writerA(4), 1, "late")
	shadow, err := adapt.Result(decideOn(t, f, m, st), m)
	if err != nil || shadow.Outcome != gate.StaleOwner {
		t.Fatalf("shadow: %+v, %v", shadow, err)
	}
	return accepts, shadow
}

func decideOn(t testing.TB, f *fixture, m *gate.Mutation, st gate.FenceState) gate.Decision {
	v, err := f.pol.Authenticate(m, owner)
	if err != nil {
		t.Fatal(err)
	}
	return gate.Decide(gate.Input{Verified: v, State: st, Now: f.iss.Now, StatusSkewMax: f.pol.StatusSkewMax,
		Status: adapt.EvidenceFromProof(v.Status)})
}

func TestReceiptJSONRoundTrip(t *testing.T) {
	accepts, shadow := decidedReceipts(t)
	for _, r := range append(accepts, shadow) {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, r.AppendJSON(nil)) {
			t.Fatalf("MarshalJSON and AppendJSON differ:\n%s\n%s", b, r.AppendJSON(nil))
		}
		var back gate.Receipt
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back != r {
			t.Fatalf("round trip:\n%+v\n%+v", r, back)
		}
		if again, _ := json.Marshal(back); !bytes.Equal(again, b) {
			t.Fatalf("re-encoded:\n%s\n%s", again, b)
		}
	}
	a := gate.Judge(accepts, 5, 5)
	b, _ := json.Marshal(a)
	back, err := gate.DecodeAnswer(b)
	if err != nil || !reflect.DeepEqual(back, a) {
		t.Fatalf("answer round trip: %v\n%+v\n%+v", err, a, back)
	}
	none, _ := json.Marshal(gate.Judge(nil, 6, 5))
	if want := `{"verdict":"PROVEN_ABSENT","highestFence":6,"receipts":[]}`; string(none) != want {
		t.Fatalf("an answer without receipts: %s, want %s", none, want)
	}
}

// TestFormsWrittenBeforeDecode reads what the forms this one replaces
// wrote (testdata/json: a receipt in gate/internal/stored's form, as
// redisgate's receipts hash and objgate's batches hold them, and the
// ledger's answers) and writes it back byte for byte.
func TestFormsWrittenBeforeDecode(t *testing.T) {
	for _, name := range []string{"stored-receipt.json", "ledger-answer.json", "ledger-answer-absent.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "json", name))
		if err != nil {
			t.Fatal(err)
		}
		var back []byte
		if strings.HasPrefix(name, "ledger-answer") {
			a, err := gate.DecodeAnswer(b)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			back, _ = json.Marshal(a)
		} else {
			r, err := gate.DecodeReceipt(b)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			back = r.AppendJSON(nil)
		}
		if !bytes.Equal(back, b) {
			t.Errorf("%s written back otherwise:\n%s\n%s", name, b, back)
		}
	}
}

func TestDecodeReceiptStrict(t *testing.T) {
	accepts, _ := decidedReceipts(t)
	good := string(accepts[0].AppendJSON(nil))
	other := string(accepts[1].AppendJSON(nil))
	for name, in := range map[string]string{
		"unknown field":      strings.Replace(good, `{`, `{"extra":1,`, 1),
		"duplicate field":    strings.Replace(good, `"mode":"enforce"`, `"mode":"enforce","mode":"shadow"`, 1),
		"re-cased field":     strings.Replace(good, `"resource"`, `"Resource"`, 1),
		"trailing data":      good + "{}",
		"not an object":      `[1]`,
		"altered field":      strings.Replace(good, `"segmentSeq":1`, `"segmentSeq":2`, 1),
		"another's id":       good[:strings.Index(good, `,`)] + other[strings.Index(other, `,`):],
		"zero fence":         strings.Replace(good, `"fenceToken":5`, `"fenceToken":0`, 1),
		"fraction fence":     strings.Replace(good, `"fenceToken":5`, `"fenceToken":5.0`, 1),
		"upper digest":       strings.Replace(good, `"payloadDigest":"sha256:`, `"payloadDigest":"SHA256:`, 1),
		"instant without ms": strings.Replace(good, `.000Z"`, `Z"`, 1),
		"unknown mode":       strings.Replace(good, `"mode":"enforce"`, `"mode":"off"`, 1),
		"unknown outcome":    strings.Replace(good, `"outcome":"ACCEPTED"`, `"outcome":"FINE"`, 1),
		"bad resource":       strings.Replace(good, `"resource":"`, `"resource":"Upper/`, 1),
		"too big":            strings.Replace(good, `{`, `{"x":"`+strings.Repeat("x", gate.ReceiptJSONBytesMax)+`",`, 1),
	} {
		if _, err := gate.DecodeReceipt([]byte(in)); !errors.Is(err, gate.ErrMalformed) {
			t.Errorf("%s: got %v, want MALFORMED", name, err)
		}
	}
	if _, err := gate.DecodeReceipt([]byte(good)); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeAnswerStrict(t *testing.T) {
	accepts, shadow := decidedReceipts(t)
	enc := func(a gate.Answer) string { b, _ := json.Marshal(a); return string(b) }
	late := accepts[0]
	late.OperationID = "op-b"
	for name, in := range map[string]string{
		"accepted without receipts": enc(gate.Answer{Verdict: gate.VerdictAccepted, HighestFence: 5}),
		"absent with receipts":      enc(gate.Answer{Verdict: gate.VerdictProvenAbsent, HighestFence: 6, Receipts: accepts}),
		"unknown verdict":           enc(gate.Answer{Verdict: "MAYBE"}),
		"out of order":              enc(gate.Answer{Verdict: gate.VerdictAccepted, Receipts: []gate.Receipt{accepts[1], accepts[0]}}),
		"twice":                     enc(gate.Answer{Verdict: gate.VerdictAccepted, Receipts: []gate.Receipt{accepts[0], accepts[0]}}),
		"two operations":            enc(gate.Answer{Verdict: gate.VerdictAccepted, Receipts: []gate.Receipt{accepts[0], late}}),
		"not an accept":             enc(gate.Answer{Verdict: gate.VerdictAccepted, Receipts: []gate.Receipt{shadow}}),
		"re-cased field":            strings.Replace(enc(gate.Judge(accepts, 5, 5)), `"verdict"`, `"Verdict"`, 1),
		"trailing data":             enc(gate.Judge(nil, 6, 5)) + " 1",
	} {
		if _, err := gate.DecodeAnswer([]byte(in)); !errors.Is(err, gate.ErrMalformed) {
			t.Errorf("%s: got %v, want MALFORMED", name, err)
		}
	}
}

// receiptJSONNames and answerJSONNames are the wire forms' field names,
// exactly (an answer's receipts are objects of receipt names).
var (
	receiptJSONNames = map[string]bool{"id": true, "resource": true, "fenceToken": true, "operationRoot": true,
		"operationId": true, "segmentSeq": true, "payloadDigest": true, "grant": true, "acceptedAt": true, "mode": true, "outcome": true}
	answerJSONNames = map[string]bool{"verdict": true, "highestFence": true, "receipts": true}
)

func FuzzDecodeReceipt(f *testing.F) {
	// seeds: testdata/fuzz/FuzzDecodeReceipt, from receiptSeeds
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := gate.DecodeReceipt(b)
		if err != nil {
			if !errors.Is(err, gate.ErrMalformed) {
				t.Fatalf("error not MALFORMED: %v", err)
			}
			return
		}
		if p := jsonkeys.Problem(b, receiptJSONNames); p != "" {
			t.Fatalf("accepted a receipt with a %s:\n%s", p, b)
		}
		again := r.AppendJSON(nil)
		back, err := gate.DecodeReceipt(again)
		if err != nil || back != r {
			t.Fatalf("re-encode: %v\n%+v\n%+v", err, r, back)
		}
		if !bytes.Equal(back.AppendJSON(nil), again) {
			t.Fatalf("the encoding of a decoded receipt moved:\n%s\n%s", again, back.AppendJSON(nil))
		}
	})
}

func FuzzDecodeAnswer(f *testing.F) {
	names := map[string]bool{}
	for _, m := range []map[string]bool{receiptJSONNames, answerJSONNames} {
		for k := range m {
			names[k] = true
		}
	}
	// seeds: testdata/fuzz/FuzzDecodeAnswer, from answerSeeds
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := gate.DecodeAnswer(b)
		if err != nil {
			if !errors.Is(err, gate.ErrMalformed) {
				t.Fatalf("error not MALFORMED: %v", err)
			}
			return
		}
		if p := jsonkeys.Problem(b, names); p != "" {
			t.Fatalf("accepted an answer with a %s:\n%s", p, b)
		}
		again, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		back, err := gate.DecodeAnswer(again)
		if err != nil || !reflect.DeepEqual(back, a) {
			t.Fatalf("re-encode: %v\n%+v\n%+v", err, a, back)
		}
	})
}

// receiptSeeds are the decided receipts' wire forms and near-misses the
// decoder must refuse.
func receiptSeeds(t testing.TB) map[string][]byte {
	accepts, shadow := decidedReceipts(t)
	good := accepts[0].AppendJSON(nil)
	return map[string][]byte{
		"accepted":  good,
		"shadow":    shadow.AppendJSON(nil),
		"duplicate": bytes.Replace(good, []byte(`"segmentSeq":1`), []byte(`"segmentSeq":1,"segmentSeq":2`), 1),
		"recased":   bytes.Replace(good, []byte(`"grant"`), []byte(`"Grant"`), 1),
		"altered":   bytes.Replace(good, []byte(`"fenceToken":5`), []byte(`"fenceToken":6`), 1),
	}
}

// answerSeeds are answers of each verdict and near-misses.
func answerSeeds(t testing.TB) map[string][]byte {
	accepts, _ := decidedReceipts(t)
	enc := func(a gate.Answer) []byte { b, _ := json.Marshal(a); return b }
	good := enc(gate.Judge(accepts, 5, 5))
	return map[string][]byte{
		"accepted":      good,
		"proven-absent": enc(gate.Judge(nil, 6, 5)),
		"undetermined":  enc(gate.Judge(nil, 5, 5)),
		"out-of-order":  enc(gate.Answer{Verdict: gate.VerdictAccepted, HighestFence: 5, Receipts: []gate.Receipt{accepts[1], accepts[0]}}),
		"duplicate":     bytes.Replace(good, []byte(`"highestFence":5`), []byte(`"highestFence":5,"highestFence":6`), 1),
	}
}
