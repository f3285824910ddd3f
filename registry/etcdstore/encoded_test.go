package etcdstore

import (
	"bytes"
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// A write decided on the record the store last put for its resource
// compares the bytes that put encoded (no second encoding), and any
// other record — a different one, another resource's in the same slot —
// compares its own encoding.
func TestRecordWasComparesTheBytesItsPutEncoded(t *testing.T) {
	s := &Store{prefix: "/fg/"}
	put := &lockstate.Record{HighestFence: 7, FreeAtMs: 123}
	t1 := s.txnOf(registry.Write{Resource: "a", RecordRev: 3, Record: put})
	putVal := t1.then[0].GetRequestPut().Value
	if !bytes.Equal(putVal, s.form.EncodeRecord(put)) {
		t.Fatalf("put %x, want the record's encoding", putVal)
	}
	was := func(res string, rec *lockstate.Record) []byte {
		t.Helper()
		tx := s.txnOf(registry.Write{Resource: res, RecordWas: rec, Record: &lockstate.Record{HighestFence: 8}})
		return tx.cmps[0].GetValue()
	}
	if got := was("a", put); &got[0] != &putVal[0] {
		t.Fatalf("the compare of the record just put encoded it again")
	}
	// That write put a new record for "a": the old one is no longer the
	// slot's, and is encoded afresh, to the same bytes.
	if got := was("a", put); &got[0] == &putVal[0] || !bytes.Equal(got, putVal) {
		t.Fatalf("compare %x, want a fresh encoding %x", got, putVal)
	}
	other := &lockstate.Record{HighestFence: 9}
	s.txnOf(registry.Write{Resource: "b", Record: other})
	if got := was("a", other); !bytes.Equal(got, s.form.EncodeRecord(other)) {
		t.Fatalf("another resource's record compared as %x", got)
	}
	equal := &lockstate.Record{HighestFence: 7, FreeAtMs: 123} // equal contents, another record
	if got := was("c", equal); !bytes.Equal(got, putVal) {
		t.Fatalf("compare %x, want %x", got, putVal)
	}
}
