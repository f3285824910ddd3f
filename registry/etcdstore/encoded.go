package etcdstore

import (
	"sync/atomic"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// The records this store last encoded. A write puts a record; the
// registry caches that record (the same *lockstate.Record: the core never
// changes a record in place, it clones) and its next write to the
// resource names it as the record it was decided on (Write.RecordWas),
// without the stored bytes, which the registry never saw. The store would
// encode the record a second time for that compare; instead it finds the
// bytes it encoded for the put. Same record, same form: the same bytes
// (at 64 resources one encoding in three, about 2 µs a cycle through
// serve).

// encodedRecordSlots is how many resources' last encodings are kept, by a
// hash of the resource (a slot holds one; a miss encodes again).
const encodedRecordSlots = 1024

type encodedRecords struct {
	slots [encodedRecordSlots]atomic.Pointer[encodedRecord]
}

type encodedRecord struct {
	resource string
	rec      *lockstate.Record
	raw      []byte
}

func encodedSlot(resource string) uint32 {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(resource); i++ {
		h = (h ^ uint32(resource[i])) * 16777619
	}
	return h % encodedRecordSlots
}

// encode returns rec in form f, and remembers it as resource's last.
func (e *encodedRecords) encode(f registry.StoredForm, resource string, rec *lockstate.Record) []byte {
	raw := f.EncodeRecord(rec)
	e.slots[encodedSlot(resource)].Store(&encodedRecord{resource: resource, rec: rec, raw: raw})
	return raw
}

// was returns rec in form f: the bytes encode made for this very record,
// or a fresh encoding.
func (e *encodedRecords) was(f registry.StoredForm, resource string, rec *lockstate.Record) []byte {
	if x := e.slots[encodedSlot(resource)].Load(); x != nil && x.rec == rec && x.resource == resource {
		return x.raw
	}
	return f.EncodeRecord(rec)
}
