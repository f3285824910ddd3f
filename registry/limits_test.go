// This file proves the shell hands the decisions all of its
// configuration they read: every field of lockstate.Limits is the Config
// field of the same name, value for value, so a limit added to one and
// not copied by Config.limits fails here instead of reading as 0.
package registry

import (
	"reflect"
	"strings"
	"testing"
)

func TestLimitsCarryTheConfig(t *testing.T) {
	cfg := DefaultConfig(7)
	cv := reflect.ValueOf(&cfg).Elem()
	lt := reflect.TypeOf(cfg.limits())
	for i := range lt.NumField() {
		name := lt.Field(i).Name
		f := cv.FieldByName(name)
		if !f.IsValid() {
			t.Fatalf("lockstate.Limits.%s has no Config field of that name", name)
		}
		switch f.Kind() { // a value of its own, so a swapped pair shows too
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int:
			f.SetInt(int64(1000 + i))
		default:
			f.SetUint(uint64(1000 + i))
		}
	}
	lim := reflect.ValueOf(cfg.limits())
	for i := range lt.NumField() {
		name := lt.Field(i).Name
		if got, want := lim.Field(i).Interface(), cv.FieldByName(name).Interface(); got != want {
			t.Errorf("Limits.%s = %v, Config.%s = %v", name, got, name, want)
		}
	}
}

// TestHandoffClaimRangeRefusedOutside: Validate refuses a claim window
// outside [HandoffClaimMsMin, HandoffClaimMsMax] naming the range, and
// accepts both ends and the default (0 fills it).
func TestHandoffClaimRangeRefusedOutside(t *testing.T) {
	for _, tc := range []struct {
		ms uint64
		ok bool
	}{
		{0, true}, {1, false}, {HandoffClaimMsMin - 1, false}, {HandoffClaimMsMin, true},
		{2000, true}, {HandoffClaimMsMax, true}, {HandoffClaimMsMax + 1, false},
	} {
		c := DefaultConfig(1)
		c.HandoffClaimMs = tc.ms
		err := c.Validate()
		if tc.ok != (err == nil) {
			t.Fatalf("handoffClaimMs %d: %v, want accepted %t", tc.ms, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "[500, 30000]") {
			t.Fatalf("handoffClaimMs %d: %v, want the range named", tc.ms, err)
		}
	}
}
