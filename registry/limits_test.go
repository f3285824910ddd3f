// This file proves the shell hands the decisions all of its
// configuration they read: every field of lockstate.Limits is the Config
// field of the same name, value for value, so a limit added to one and
// not copied by Config.limits fails here instead of reading as 0.
package registry

import (
	"reflect"
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
