// This file proves what a transport is told to do with each outcome of a
// delivered job: acknowledge what stands, wait on a gap, drop what can
// never apply (a superseded owner's job above all), retry what is unknown.
package downstream_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/fencegate/fencegate/downstream"
	"github.com/fencegate/fencegate/gate"
)

func TestDispositionOf(t *testing.T) {
	rej := func(o gate.Outcome) error { return &gate.Rejection{Outcome: o} }
	rows := []struct {
		err  error
		want downstream.Disposition
	}{
		{nil, downstream.Done},
		{rej(gate.Replayed), downstream.Done},
		{rej(gate.SegmentGap), downstream.Later},
		{rej(gate.StaleOwner), downstream.Drop},
		{rej(gate.NotHeld), downstream.Drop},
		{rej(gate.Quarantined), downstream.Drop},
		{rej(gate.Malformed), downstream.Drop},
		{fmt.Errorf("%w \"x\"", downstream.ErrUnknownHop), downstream.Drop},
		{downstream.ErrPayloadDigest, downstream.Drop},
		{errors.New("database is locked"), downstream.Retry},
	}
	for _, r := range rows {
		if got := downstream.DispositionOf(r.err); got != r.want {
			t.Fatalf("%v: %d, want %d", r.err, got, r.want)
		}
	}
}
