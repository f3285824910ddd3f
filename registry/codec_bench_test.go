// This file measures the stored forms on the record and entry of a held
// lease with two ended leases and one waiter (the shape a busy resource
// writes): bytes, and the CPU of encoding and decoding each form, JSON
// and compact side by side in one run. Timings are reported, never
// asserted.
//
//	go test ./registry -run '^$' -bench StoredForm -count 5
package registry

import (
	"testing"

	"github.com/fencegate/fencegate/registry/lockstate"
)

// typicalRecord is a held lease, one waiter, two ended leases.
func typicalRecord() *lockstate.Record {
	rec := held("spiffe://ex.org/w/1", 42, t0)
	rec = acquireAt(rec, "spiffe://ex.org/w/2", "req-w2", t0+5000, t0+1).Record
	rec.Ended = []lockstate.EndedLease{
		{Lease: "l40-0a1b2c3d", Owner: "spiffe://ex.org/w/3", State: "RELEASED", AtMs: t0 - 2000},
		{Lease: "l41-0a1b2c3e", Owner: "spiffe://ex.org/w/1", State: "EXPIRED", AtMs: t0 - 1000},
	}
	return rec
}

func BenchmarkStoredForm(b *testing.B) {
	rec := typicalRecord()
	entry := &lockstate.RequestEntry{Grant: rec.Holder.Grant, ParamsDigest: rec.Holder.ParamsDigest, State: "HELD"}
	for _, f := range []StoredForm{FormJSON, FormCompact} {
		rb, eb := f.EncodeRecord(rec), f.EncodeRequestEntry(entry)
		b.Run(f.String()+"/encode", func(b *testing.B) {
			for b.Loop() {
				f.EncodeRecord(rec)
				f.EncodeRequestEntry(entry)
			}
			b.ReportMetric(float64(len(rb)), "record-B")
			b.ReportMetric(float64(len(eb)), "entry-B")
		})
		b.Run(f.String()+"/decode", func(b *testing.B) {
			for b.Loop() {
				if _, err := DecodeRecord(rb); err != nil {
					b.Fatal(err)
				}
				if _, err := DecodeRequestEntry(eb); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
