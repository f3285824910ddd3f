// This file proves every counter of Counts is merged: a field that merge
// would drop, or merge by the wrong rule, fails here.
package sim

import (
	"reflect"
	"testing"
)

// TestMergeTakesEveryField fills every field of a round's Counts with a
// value of its own, merges it twice into an empty total and checks each
// field: sums doubled, maxima kept, slices concatenated, the violations
// and the digest merged by hand.
func TestMergeTakesEveryField(t *testing.T) {
	round := &Counts{}
	rv := reflect.ValueOf(round).Elem()
	for i := range rv.NumField() {
		f := rv.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Uint64:
			f.SetUint(uint64(i + 1))
		case reflect.Array:
			for j := range f.Len() {
				f.Index(j).SetInt(int64(i + j + 1))
			}
		case reflect.Slice:
			f.Set(reflect.Append(reflect.MakeSlice(f.Type(), 0, 1), reflect.New(f.Type().Elem()).Elem()))
		default:
			t.Fatalf("Counts.%s (%s): the test cannot fill it", rv.Type().Field(i).Name, f.Type())
		}
	}
	total := &Counts{}
	total.merge(round)
	total.merge(round)
	tv := reflect.ValueOf(total).Elem()
	for i, how := range countsMerge {
		name, got, one := rv.Type().Field(i).Name, tv.Field(i), rv.Field(i)
		var ok bool
		switch {
		case name == "Digest":
			ok = total.Digest == mixDigest(mixDigest(0, round.Digest), round.Digest)
		case name == "Violations":
			ok = len(total.Violations) == 2
		case how == mergeSum && got.Kind() == reflect.Array:
			ok = true
			for j := range got.Len() {
				ok = ok && got.Index(j).Int() == 2*one.Index(j).Int()
			}
		case how == mergeSum:
			ok = got.Int() == 2*one.Int()
		case how == mergeMax:
			ok = got.Int() == one.Int()
		case how == mergeAppend:
			ok = got.Len() == 2
		}
		if !ok {
			t.Errorf("Counts.%s merged to %v from two rounds of %v", name, got, one)
		}
	}
}
