package storetest

import (
	"fmt"
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// RecordsReader is a store that counts the records its listing pages
// read (memstore, etcdstore and zkstore each by its own measure: the
// names a page looked at, the records its member read or visited).
type RecordsReader interface{ RecordsRead() uint64 }

// Sizes of the page-cost row: a page of PageReadsLimit over
// PageReadsRecords records, so a page that reads to the end of the
// range reads several times what a bounded one may.
const (
	PageReadsRecords = 300
	PageReadsLimit   = 25
)

// PageReads fills s with PageReadsRecords records under "pr/" and
// returns what each of three pages of PageReadsLimit read, after a first
// page (which may list what later pages reuse, as zkstore's does): the
// second page, one from the middle, and the last full one.
func PageReads(t testing.TB, s registry.Store) []uint64 {
	t.Helper()
	rr, ok := s.(RecordsReader)
	if !ok {
		t.Fatalf("%T does not count what its pages read (storetest.RecordsReader)", s)
	}
	name := func(i int) string { return fmt.Sprintf("pr/%04d", i) }
	for i := range PageReadsRecords {
		if res, err := s.Commit(ctx, registry.Write{Resource: name(i), Record: &lockstate.Record{HighestFence: uint64(i + 1)}}); err != nil || !res.OK {
			t.Fatalf("commit %s: %+v, %v", name(i), res, err)
		}
	}
	page := func(after string) uint64 {
		t.Helper()
		before := rr.RecordsRead()
		got, err := s.ScanRecords(ctx, "pr/", after, PageReadsLimit)
		if err != nil || len(got) != PageReadsLimit {
			t.Fatalf("page after %q: %d records, %v", after, len(got), err)
		}
		return rr.RecordsRead() - before
	}
	page("")
	return []uint64{page(name(PageReadsLimit - 1)), page(name(PageReadsRecords / 2)), page(name(PageReadsRecords - PageReadsLimit - 1))}
}

// testPageReadsItsLimit: a page of 25 over 300 records reads at most
// twice its limit, at the front, the middle and the back (a page that
// reads to the end of the range reads up to 275).
func testPageReadsItsLimit(t *testing.T, s registry.Store) {
	reads := PageReads(t, s)
	for i, n := range reads {
		if n < PageReadsLimit || n > 2*PageReadsLimit {
			t.Errorf("page %d of %d over %d records read %d (all pages: %v): want %d to %d", i+2, PageReadsLimit, PageReadsRecords, n, reads, PageReadsLimit, 2*PageReadsLimit)
		}
	}
}
