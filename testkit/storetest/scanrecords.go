package storetest

import (
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// testScanRecords: ScanRecords lists only the records under its prefix,
// in name order, after its cursor, at most limit, each with its mod
// revision; resources without a record are not listed.
func testScanRecords(t *testing.T, s registry.Store) {
	names := []string{"jobs/b", "jobs/a", "jobs/a/1", "jobsx/c", "other/z", "jobs/c"}
	revs := map[string]uint64{}
	for i, n := range names {
		res := mustCommit(t, s, registry.Write{Resource: n, Record: &lockstate.Record{HighestFence: uint64(i + 1)}})
		revs[n] = res.Revision
	}
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		page, err := s.ScanRecords(ctx, "jobs/", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 2 || pages > 10 {
			t.Fatalf("page of %d after %d pages, limit 2", len(page), pages)
		}
		if len(page) == 0 {
			break
		}
		for _, sl := range page {
			if sl.Record == nil || sl.ModRev != revs[sl.Resource] {
				t.Fatalf("slot %s: record %v, mod revision %d, want %d", sl.Resource, sl.Record, sl.ModRev, revs[sl.Resource])
			}
			got = append(got, sl.Resource)
		}
		after = page[len(page)-1].Resource
	}
	want := []string{"jobs/a", "jobs/a/1", "jobs/b", "jobs/c"}
	if len(got) != len(want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("listed %v, want %v", got, want)
		}
	}
	if all, err := s.ScanRecords(ctx, "", "", 100); err != nil || len(all) != len(names) {
		t.Fatalf("every record: %d listed, %v; want %d", len(all), err, len(names))
	}
	if none, err := s.ScanRecords(ctx, "nothing/", "", 100); err != nil || len(none) != 0 {
		t.Fatalf("empty prefix: %v, %v", none, err)
	}
}
