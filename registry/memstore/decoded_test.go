// This file proves that what a read returns shares nothing with what the
// store keeps (changing it changes nothing stored) and is what decoding
// the stored form gives; a field added to the stored types that a copy
// would share, or that the stored form would drop, fails here, not in a
// caller.
package memstore

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// TestCopiesShareNothing walks the stored types: every field must be a
// plain value, except the ones cloneRecord copies one level deep, whose
// elements must be plain values in turn.
func TestCopiesShareNothing(t *testing.T) {
	copied := map[string]bool{"Record.Holder": true, "Record.Waiters": true, "Record.Ended": true, "Record.Readers": true, "Holder.Members": true, "Waiter.Members": true}
	var walk func(typ reflect.Type, deep bool)
	walk = func(typ reflect.Type, deep bool) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := typ.Name() + "." + f.Name
			switch f.Type.Kind() {
			case reflect.Struct:
				walk(f.Type, deep)
			case reflect.Pointer, reflect.Slice:
				if !deep || !copied[name] {
					t.Errorf("%s (%s) would be shared between the store and a reader: copy it in cloneRecord (decoded.go) and list it here", name, f.Type)
					continue
				}
				if e := f.Type.Elem(); e.Kind() == reflect.Struct {
					walk(e, true) // its elements' own fields: plain, or listed here and copied in turn
				} else if e.Kind() != reflect.String {
					t.Errorf("%s (%s): elements that are not plain values", name, f.Type)
				}
			case reflect.Map, reflect.Interface, reflect.Chan, reflect.Func, reflect.Array, reflect.UnsafePointer:
				t.Errorf("%s (%s) would be shared between the store and a reader", name, f.Type)
			}
		}
	}
	walk(reflect.TypeFor[lockstate.Record](), true)
	walk(reflect.TypeFor[lockstate.RequestEntry](), false)
	walk(reflect.TypeFor[lockstate.Settings](), false)
}

// TestReadersCannotChangeTheStore changes every part of what two reads
// returned and reads again.
func TestReadersCannotChangeTheStore(t *testing.T) {
	ctx := context.Background()
	s := New()
	key := lockstate.RequestKey{Owner: "o", RequestID: "1"}
	rec := &lockstate.Record{HighestFence: 2, Holder: &lockstate.Holder{Grant: lockstate.GrantBody{FenceToken: 2, Lease: "l2"}, ExpiresAtMs: 5, Members: []string{"a", "r"}},
		Waiters: []lockstate.Waiter{{Owner: "w", Members: []string{"r", "z"}, SetTTLMs: 3}}, Ended: []lockstate.EndedLease{{Lease: "l1", State: "RELEASED"}}}
	if res, err := s.Commit(ctx, registry.Write{Resource: "r", Record: rec,
		Requests: []registry.RequestWrite{{Key: key, Entry: &lockstate.RequestEntry{State: "HELD"}}}}); err != nil || !res.OK {
		t.Fatalf("commit: %+v %v", res, err)
	}
	want := registry.EncodeRecord(rec)
	for range 2 { // the first read decodes, the second copies the decoding
		snap, err := s.Read(ctx, "r", []lockstate.RequestKey{key})
		if err != nil {
			t.Fatal(err)
		}
		snap.Record.Holder.ExpiresAtMs, snap.Record.Waiters[0].Owner, snap.Record.Ended[0].Lease = 9, "x", "x"
		snap.Record.Holder.Members[0], snap.Record.Waiters[0].Members[1] = "x", "x"
		snap.Record.HighestFence = 7
		snap.Requests[0].Entry.State = "EXPIRED"
	}
	snap, err := s.Read(ctx, "r", []lockstate.RequestKey{key})
	if err != nil {
		t.Fatal(err)
	}
	if got := registry.EncodeRecord(snap.Record); !bytes.Equal(got, want) || snap.Requests[0].Entry.State != "HELD" {
		t.Fatalf("a reader changed the store: %s, entry %s", got, snap.Requests[0].Entry.State)
	}
}

// TestCopiesAreTheDecoding: the store keeps a copy of each value written
// as its decoding, which is sound only if the stored form keeps every
// field. A field the encoding skips (json:"-", unexported) fails here; a
// fully populated record read back equals its stored form decoded.
func TestCopiesAreTheDecoding(t *testing.T) {
	var walk func(typ reflect.Type)
	walk = func(typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); !f.IsExported() || tag == "-" || tag == "" {
				t.Errorf("%s.%s is not in the stored form under a name of its own: a copy of a written value would not be its decoding", typ.Name(), f.Name)
			}
			switch ft := f.Type; ft.Kind() {
			case reflect.Struct:
				walk(ft)
			case reflect.Pointer, reflect.Slice:
				if ft.Elem().Kind() == reflect.Struct {
					walk(ft.Elem())
				}
			}
		}
	}
	walk(reflect.TypeFor[lockstate.Record]())
	walk(reflect.TypeFor[lockstate.RequestEntry]())
	walk(reflect.TypeFor[lockstate.Settings]())

	s := New()
	rec := &lockstate.Record{HighestFence: 3, Floor: 1, PolicyGeneration: 2, FreeAtMs: 4,
		Holder:  &lockstate.Holder{Grant: lockstate.GrantBody{Resource: "r", Owner: "o", RequestID: "q", Lease: "l", OperationRoot: "x", OperationClass: "c", FenceToken: 3, PolicyGeneration: 2, IssuerEpoch: 1, TTLMs: 5, IssuedAtMs: 6}, ParamsDigest: "p", ExpiresAtMs: 7},
		Waiters: []lockstate.Waiter{{Owner: "w", RequestID: "q2", DeadlineMs: 8, OperationRoot: "y", OperationClass: "c", TTLMs: 9, ParamsDigest: "p2", SeenMs: 10}},
		Ended:   []lockstate.EndedLease{{Lease: "l0", Owner: "o0", State: "RELEASED", AtMs: 11}}}
	if res, err := s.Commit(context.Background(), registry.Write{Resource: "r", Record: rec}); err != nil || !res.OK {
		t.Fatalf("commit: %+v %v", res, err)
	}
	snap, err := s.Read(context.Background(), "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := registry.DecodeRecord(registry.EncodeRecord(rec))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(snap.Record, decoded) {
		t.Fatalf("read back %+v, its stored form decodes to %+v", snap.Record, decoded)
	}
}
