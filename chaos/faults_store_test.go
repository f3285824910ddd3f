// Proves the snapshot is tried past the latest planned restore (an
// ensemble leaderless through it, seed 605, still gets its snapshot and
// restore), and that a restore snapshotAgeMin after the last try still
// falls inside the fault window, for windows of 24 s and more.
package chaos

import (
	"testing"
	"time"
)

func TestSnapshotDeadline(t *testing.T) {
	start := time.Date(2026, 12, 7, 7, 20, 33, 0, time.UTC)
	for d := 24 * time.Second; d <= 10*time.Minute; d += 1500 * time.Millisecond {
		until := start.Add(d)
		last := snapshotDeadline(start, until)
		latestRestore := start.Add(d*45/100 + d/10) // faulter.run's restoreAt at its largest
		if !last.After(latestRestore) {
			t.Errorf("window %s: the snapshot is tried until %s, not past the latest planned restore %s",
				d, last.Sub(start), latestRestore.Sub(start))
		}
		if restore := last.Add(snapshotAgeMin); !restore.Before(until) {
			t.Errorf("window %s: a snapshot at the last try (%s) is restored at %s, not before the faults end",
				d, last.Sub(start), restore.Sub(start))
		}
	}
}
