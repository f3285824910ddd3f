// Proves the lock-set wire rules: member lists must be sorted, distinct,
// in size and canonical, never a semaphore's slot; a set's request ID
// leaves room for its members' derived IDs, which are tokens, and the
// set. prefix is reserved.
package wire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

func TestValidateLockSet(t *testing.T) {
	many := make([]string, wire.LockSetMembersMax+1)
	for i := range many {
		many[i] = "r/" + string(rune('a'+i))
	}
	for name, c := range map[string]struct {
		members []string
		ok      bool
	}{
		"two sorted":      {[]string{"a", "b"}, true},
		"max":             {many[:wire.LockSetMembersMax], true},
		"one":             {[]string{"a"}, false},
		"none":            {nil, false},
		"too many":        {many, false},
		"unsorted":        {[]string{"b", "a"}, false},
		"duplicate":       {[]string{"a", "a"}, false},
		"not canonical":   {[]string{"a", "B c"}, false},
		"a slot":          {[]string{"a", "jobs/_slot.0"}, false},
		"slot-like names": {[]string{"a", "jobs/_slot.00"}, true},
	} {
		err := wire.ValidateLockSet(c.members)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, wire.ErrInvalid) {
			t.Errorf("%s: %v, want ok=%v (ErrInvalid otherwise)", name, err, c.ok)
		}
	}
}

func TestSetRequestIDs(t *testing.T) {
	long := strings.Repeat("x", wire.LockSetRequestIDBytesMax)
	if err := wire.ValidateSetRequestID(long); err != nil {
		t.Fatalf("longest set request ID refused: %v", err)
	}
	for i := range wire.LockSetMembersMax {
		if err := grant.ValidateToken(wire.MemberRequestID(long, i)); err != nil {
			t.Errorf("member %d's request ID of the longest set request ID is no token: %v", i, err)
		}
	}
	for name, id := range map[string]string{
		"too long": long + "x", "reserved": wire.MemberRequestID("abc", 0), "bare prefix": "set.x", "empty": "",
	} {
		if err := wire.ValidateSetRequestID(id); !errors.Is(err, wire.ErrInvalid) {
			t.Errorf("%s (%q): %v, want ErrInvalid", name, id, err)
		}
	}
	if got := wire.MemberRequestID("r1", 12); got != "set.12.r1" || !wire.ReservedRequestID(got) || wire.ReservedRequestID("settle") {
		t.Errorf("MemberRequestID/ReservedRequestID: %q", got)
	}
}

func TestValidateLockSetLeases(t *testing.T) {
	ok := []wire.LeaseRequest{{Resource: "a", Lease: "l1-x"}, {Resource: "b", Lease: "l2-y"}}
	if err := wire.ValidateLockSetLeases(ok); err != nil {
		t.Fatal(err)
	}
	for name, ls := range map[string][]wire.LeaseRequest{
		"bad lease": {{Resource: "a", Lease: "l1 x"}, {Resource: "b", Lease: "l2"}},
		"unsorted":  {{Resource: "b", Lease: "l1"}, {Resource: "a", Lease: "l2"}},
		"one":       {{Resource: "a", Lease: "l1"}},
	} {
		if err := wire.ValidateLockSetLeases(ls); !errors.Is(err, wire.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestRowsCarryTheLockSet(t *testing.T) {
	l := wire.LockList{Locks: []wire.LockStatus{{Resource: "a", Holder: &wire.LockHolder{Owner: "o", LockSet: []string{"a", "b"}}}, {Resource: "c", Holder: &wire.LockHolder{Owner: "o"}}}}
	rows := wire.RowsOf(l).Rows
	if strings.Join(rows[0].LockSet, ",") != "a,b" || rows[1].LockSet != nil {
		t.Fatalf("rows: %+v", rows)
	}
}
