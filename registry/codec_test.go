// This file proves the stored forms: every field survives a round trip in
// both, the compact form is the default and smaller, the JSON earlier
// versions wrote (no marker) still decodes strictly, and the compact
// decoder refuses every truncation, trailing byte, non-minimal varint,
// long-spelled digest, unknown state or flag and misfiled kind with
// ErrCorrupt. FuzzDecodeRecord and FuzzDecodeRequestEntry add that no
// input panics and that what decodes re-encodes to itself; their seed
// corpus (testdata/fuzz) is what the fixtures here produce, rewritten
// with: go test ./registry -run TestFuzzSeedCorpus -update
package registry

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/testkit/fuzzseed"
	"github.com/fencegate/fencegate/wire"
)

var update = flag.Bool("update", false, "rewrite the fuzz seed corpus")

const t0 = int64(1_780_000_000_000) // a fixed registry instant, ms

// acquireAt decides owner's acquire of res/1 (waiting until waitUntil, if
// not 0) against rec at now, with the default limits.
func acquireAt(rec *lockstate.Record, owner, requestID string, waitUntil, now int64) lockstate.AcquireDecision {
	req := wire.AcquireRequest{Resource: "res/1", OperationID: "op-" + requestID, OperationClass: "settle", RequestID: requestID, TTLMs: 10_000}
	if waitUntil != 0 {
		req.WaitMs = uint64(waitUntil - now)
	}
	lim := DefaultConfig(5).limits()
	in, err := lockstate.NewAcquireInput(owner, req, now, lim)
	if err != nil {
		panic(err)
	}
	d, err := lockstate.DecideAcquire(rec, nil, lockstate.Settings{}, in, now, lim)
	if err != nil || d.Record == nil {
		panic(fmt.Sprintf("fixture: %v", err))
	}
	return d
}

// held returns a record held by owner since at, with fence.
func held(owner string, fence uint64, at int64) *lockstate.Record {
	return acquireAt(&lockstate.Record{HighestFence: fence - 1}, owner, "req-"+owner, 0, at).Record
}

const digestA = "sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"

// fullRecord sets every field of a record, negative instants and
// non-digest strings where digests usually go included.
func fullRecord() *lockstate.Record {
	return &lockstate.Record{
		HighestFence: 1<<40 + 3, Floor: 2, PolicyGeneration: 300, FreeAtMs: t0 + 5,
		Holder: &lockstate.Holder{Grant: lockstate.GrantBody{
			Resource: "inv/1", Owner: "spiffe://ex.org/w/1", RequestID: "r-1", Lease: "l3-0a1b2c3d",
			OperationRoot: digestA, OperationClass: "settle", FenceToken: 1<<40 + 3, PolicyGeneration: 300,
			IssuerEpoch: 7, TTLMs: 30_000, IssuedAtMs: t0, HeldUntilMs: t0 + 9_000,
		}, ParamsDigest: digestA, ExpiresAtMs: t0 + 30_000},
		Waiters: []lockstate.Waiter{
			{Owner: "w", RequestID: "q2", DeadlineMs: t0 + 8, PollUntilMs: t0 + 7, JoinedMs: t0 + 1,
				OperationRoot: "sha256:NOT-HEX", OperationClass: "c", TTLMs: 9, ParamsDigest: "p2", SeenMs: -10},
			{Owner: "v", RequestID: "q3", OperationRoot: strings.ToUpper(digestA), ParamsDigest: digestA},
		},
		Ended: []lockstate.EndedLease{
			{Lease: "l1", Owner: "o0", State: grant.StateReleased, AtMs: t0 - 11},
			{Lease: "l2", Owner: "o1", State: grant.StateExpired, AtMs: t0 - 1, Broken: true},
		},
	}
}

// setRecord is fullRecord held by a lock set's member, with a set's
// ticket behind a plain one.
func setRecord() *lockstate.Record {
	rec := fullRecord()
	rec.Holder.Members = []string{"inv/1", "inv/2"}
	rec.Waiters[1].Members, rec.Waiters[1].SetTTLMs = []string{"inv/0", "inv/1", "inv/9"}, 20_000
	return rec
}

func fullEntry() *lockstate.RequestEntry {
	h := fullRecord().Holder
	return &lockstate.RequestEntry{Grant: h.Grant, ParamsDigest: h.ParamsDigest, State: grant.StateRevoked, EndedAtMs: t0 + 9}
}

func TestStoredFormsRoundTrip(t *testing.T) {
	recs := map[string]*lockstate.Record{"full": fullRecord(), "empty": {}, "held": held("a", 4, t0), "lock set": setRecord()}
	for name, rec := range recs {
		for _, f := range []StoredForm{FormCompact, FormJSON} {
			b := f.EncodeRecord(rec)
			back, err := DecodeRecord(b)
			if err != nil || !reflect.DeepEqual(back, rec) {
				t.Fatalf("%s record in %s: %v\n got %+v\nwant %+v", name, f, err, back, rec)
			}
			if again := f.EncodeRecord(back); !bytes.Equal(again, b) {
				t.Fatalf("%s record in %s re-encodes differently", name, f)
			}
		}
		if c, j := len(EncodeRecord(rec)), len(FormJSON.EncodeRecord(rec)); c >= j {
			t.Errorf("%s record: compact %d bytes, JSON %d", name, c, j)
		}
	}
	for _, f := range []StoredForm{FormCompact, FormJSON} {
		e := fullEntry()
		back, err := DecodeRequestEntry(f.EncodeRequestEntry(e))
		if err != nil || !reflect.DeepEqual(back, e) {
			t.Fatalf("entry in %s: %v\n got %+v\nwant %+v", f, err, back, e)
		}
	}
	if EncodeRecord(fullRecord())[0] != markRecordV1 || EncodeRequestEntry(fullEntry())[0] != markEntryV1 {
		t.Fatal("the default form is not the compact one")
	}
	if EncodeRecord(setRecord())[0] != markRecordSetsV1 {
		t.Fatal("a record naming a lock set is not in the lock sets' form")
	}
	// One encoding per record: a plain record spelled in the lock sets'
	// form (every member list empty) does not decode.
	h := *setRecord().Holder
	h.Members = nil
	v1 := EncodeRecord(&lockstate.Record{Holder: &h})
	spelled := append([]byte{markRecordSetsV1}, v1[1:len(v1)-3]...) // up to the holder's expiresAtMs; v1 then has freeAtMs 0, 0 waiters, 0 ended
	spelled = append(spelled, 0, 0, 0, 0)                           // members 0, freeAtMs 0, waiters 0, ended 0
	if _, err := DecodeRecord(spelled); !errors.Is(err, wire.ErrCorrupt) || !strings.Contains(err.Error(), "naming no set") {
		t.Fatalf("a plain record in the lock sets' form: %v, want ErrCorrupt", err)
	}
}

// TestLegacyJSONStillDecodes reads the bytes an earlier version stored,
// written out here rather than produced by today's encoder.
func TestLegacyJSONStillDecodes(t *testing.T) {
	rec := `{"highestFence":3,"holder":{"grant":{"resource":"inv/1","owner":"w","requestId":"r","lease":"l3-00000000","operationRoot":"` + digestA +
		`","operationClass":"settle","fenceToken":3,"policyGeneration":0,"issuerEpoch":7,"ttlMs":10000,"issuedAtMs":1780000000000},` +
		`"paramsDigest":"p","expiresAtMs":1780000010000},"ended":[{"lease":"l2","owner":"w","state":"RELEASED","atMs":1779999999000}]}`
	got, err := DecodeRecord([]byte(rec))
	if err != nil || got.Holder.Grant.FenceToken != 3 || got.Ended[0].State != grant.StateReleased {
		t.Fatalf("legacy record: %v %+v", err, got)
	}
	entry := `{"grant":{"resource":"inv/1","owner":"w","requestId":"r","lease":"l2","operationRoot":"` + digestA +
		`","operationClass":"settle","fenceToken":2,"policyGeneration":0,"issuerEpoch":7,"ttlMs":10000,"issuedAtMs":1779999990000},` +
		`"paramsDigest":"p","state":"RELEASED","endedAtMs":1779999999000}`
	e, err := DecodeRequestEntry([]byte(entry))
	if err != nil || e.State != grant.StateReleased || e.EndedAtMs != 1779999999000 {
		t.Fatalf("legacy entry: %v %+v", err, e)
	}
	for name, bad := range map[string]string{
		"trailing data":  rec + "{}",
		"unknown field":  strings.Replace(rec, `"highestFence"`, `"highestFenceX":1,"highestFence"`, 1),
		"bad state":      strings.Replace(rec, "RELEASED", "GONE", 1),
		"fence above":    strings.Replace(rec, `"highestFence":3`, `"highestFence":2`, 1),
		"entry as a rec": entry,
		"re-cased field": strings.Replace(rec, `"highestFence"`, `"HighestFence"`, 1),
		"field twice":    strings.Replace(rec, `"highestFence":3`, `"highestFence":3,"highestFence":3`, 1),
	} {
		if _, err := DecodeRecord([]byte(bad)); !errors.Is(err, wire.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

func TestCompactDecoderIsStrict(t *testing.T) {
	rec, entry := EncodeRecord(fullRecord()), EncodeRequestEntry(fullEntry())
	corrupt := func(name string, b []byte, isRecord bool) {
		t.Helper()
		var err error
		if isRecord {
			_, err = DecodeRecord(b)
		} else {
			_, err = DecodeRequestEntry(b)
		}
		if !errors.Is(err, wire.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	for n := 1; n < len(rec); n++ {
		corrupt(fmt.Sprintf("record cut at %d", n), rec[:n], true)
	}
	for n := 1; n < len(entry); n++ {
		corrupt(fmt.Sprintf("entry cut at %d", n), entry[:n], false)
	}
	corrupt("record with a trailing byte", append(bytes.Clone(rec), 0), true)
	corrupt("entry with a trailing byte", append(bytes.Clone(entry), 0), false)
	corrupt("an entry read as a record", entry, true)
	corrupt("a record read as an entry", rec, false)
	// highestFence 0 spelled in two bytes.
	corrupt("non-minimal varint", append([]byte{markRecordV1, 0x80, 0x00}, EncodeRecord(&lockstate.Record{})[2:]...), true)
	// A short digest spelled long.
	long := EncodeRequestEntry(&lockstate.RequestEntry{State: grant.StateHeld})
	e := encoder{b: []byte{markEntryV1}}
	e.grantBody(&lockstate.GrantBody{})
	e.byte(0)
	e.str(digestA)
	e.state(grant.StateHeld)
	e.int(0)
	corrupt("digest spelled long", e.b, false)
	corrupt("state byte 0", append(long[:len(long)-2:len(long)-2], 0, 0), false)
	corrupt("state byte 5", append(long[:len(long)-2:len(long)-2], 5, 0), false)
	corrupt("holder flag 2", append([]byte{markRecordV1, 0, 0, 0, 2}, EncodeRecord(&lockstate.Record{})[5:]...), true)
	// A holder whose fence is above the highest: the invariant, not the form.
	bad := fullRecord()
	bad.HighestFence = 1
	corrupt("holder above the highest fence", EncodeRecord(bad), true)
	corrupt("waiter count beyond the bytes", []byte{markRecordV1, 0, 0, 0, 0, 0, 0x7f}, true)
}

// fuzzSeeds are the inputs both fuzz targets start from: both forms of
// the fixtures, and near-misses.
func fuzzSeeds() map[string][]byte {
	return map[string][]byte{
		"record-compact":   EncodeRecord(fullRecord()),
		"record-json":      FormJSON.EncodeRecord(fullRecord()),
		"record-empty":     EncodeRecord(&lockstate.Record{}),
		"entry-compact":    EncodeRequestEntry(fullEntry()),
		"entry-json":       FormJSON.EncodeRequestEntry(fullEntry()),
		"record-truncated": EncodeRecord(fullRecord())[:40],
	}
}

func TestFuzzSeedCorpus(t *testing.T) {
	for name, b := range fuzzSeeds() {
		for _, target := range []string{"FuzzDecodeRecord", "FuzzDecodeRequestEntry"} {
			fuzzseed.Check(t, *update, "go test ./registry -run TestFuzzSeedCorpus -update", target, name, fuzzseed.Entry(b))
		}
	}
}

// FuzzDecodeRecord: no input panics, and every failure is ErrCorrupt;
// what decodes re-encodes, in the compact form, to bytes that decode to
// the same record (the same in either form: an empty list and none are
// one value), and compact input re-encodes to itself (one encoding per
// value).
func FuzzDecodeRecord(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := DecodeRecord(b)
		if err != nil {
			if !errors.Is(err, wire.ErrCorrupt) {
				t.Fatalf("error without ErrCorrupt: %v", err)
			}
			return
		}
		c := EncodeRecord(rec)
		if (b[0] == markRecordV1 || b[0] == markRecordSetsV1 || b[0] == markRecordRWV1) && !bytes.Equal(c, b) {
			t.Fatalf("compact input re-encodes differently:\n%x\n%x", b, c)
		}
		// Equal in both forms: an empty list and none are one value.
		back, err := DecodeRecord(c)
		if err != nil || !bytes.Equal(EncodeRecord(back), c) || !bytes.Equal(FormJSON.EncodeRecord(back), FormJSON.EncodeRecord(rec)) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, rec, back)
		}
	})
}

// FuzzDecodeRequestEntry is FuzzDecodeRecord for request entries.
func FuzzDecodeRequestEntry(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeRequestEntry(b)
		if err != nil {
			if !errors.Is(err, wire.ErrCorrupt) {
				t.Fatalf("error without ErrCorrupt: %v", err)
			}
			return
		}
		c := EncodeRequestEntry(e)
		if b[0] == markEntryV1 && !bytes.Equal(c, b) {
			t.Fatalf("compact input re-encodes differently:\n%x\n%x", b, c)
		}
		back, err := DecodeRequestEntry(c)
		if err != nil || !reflect.DeepEqual(back, e) || !bytes.Equal(EncodeRequestEntry(back), c) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, e, back)
		}
	})
}

// TestReadersForm: a read/write lock's record (readers, a reader's
// ticket, a downgrade's ReadersFromMs) takes its own form and round-trips
// in both; a record with none of them spelled in that form does not
// decode, and every other record keeps its marker.
func TestReadersForm(t *testing.T) {
	base := fullRecord()
	reader := *base.Holder
	reader.Grant.Resource = wire.ReadResource(reader.Grant.Resource)
	reader.Members = nil
	for name, rec := range map[string]*lockstate.Record{
		"readers":     {HighestFence: base.HighestFence, Readers: []lockstate.Holder{reader, reader}},
		"readersFrom": {HighestFence: 1, ReadersFromMs: 1780000000123},
		"readTicket":  {HighestFence: 1, Waiters: []lockstate.Waiter{{Owner: "o", RequestID: "r", Read: true, OperationRoot: digestA, ParamsDigest: digestA}}},
	} {
		b := EncodeRecord(rec)
		if b[0] != markRecordRWV1 {
			t.Fatalf("%s: marker %#x, want %#x", name, b[0], markRecordRWV1)
		}
		for _, f := range []StoredForm{FormCompact, FormJSON} {
			enc := f.EncodeRecord(rec)
			back, err := DecodeRecord(enc)
			if err != nil || !reflect.DeepEqual(back, rec) {
				t.Fatalf("%s in %s: %v\n got %+v\nwant %+v", name, f, err, back, rec)
			}
			if again := f.EncodeRecord(back); !bytes.Equal(again, enc) {
				t.Fatalf("%s in %s re-encodes differently", name, f)
			}
		}
	}
	if EncodeRecord(fullRecord())[0] != markRecordV1 || EncodeRecord(setRecord())[0] != markRecordSetsV1 {
		t.Fatal("a record without readers changed its form")
	}
	// One encoding per record: a plain record spelled in the readers' form
	// (no readers, no read ticket, readersFromMs 0) does not decode.
	spelled := []byte{markRecordRWV1, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if _, err := DecodeRecord(spelled); !errors.Is(err, wire.ErrCorrupt) || !strings.Contains(err.Error(), "no readers") {
		t.Fatalf("a plain record in the readers' form: %v, want ErrCorrupt", err)
	}
}
