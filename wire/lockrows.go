package wire

import "time"

// ListFormRows is the form= of GET /v1/locks that answers LockRows.
const ListFormRows = "rows"

// LockRows is a page of locks in the listing's lean form (GET
// /v1/locks?form=rows): what `fencegate ls` prints of each lock, with
// instants in Unix milliseconds, about a quarter of a LockList's bytes
// and of its encoding and decoding (issue 49: a walk of 100,000 locks
// was mostly JSON). Next, when set, is the after of the next page;
// ReadAtMs is the registry's clock at the read, for every row.
type LockRows struct {
	Next     string    `json:"next,omitempty"`
	ReadAtMs int64     `json:"readAtMs"`
	Rows     []LockRow `json:"rows"`
}

// LockRow is one lock of LockRows. Owner is "" when the lock is free
// (expiry judged at the read); then SinceMs and ExpiresAtMs are 0.
// Waiters counts the queue; LongestSinceMs is when its head joined (0
// when none, or when the registry that queued it did not record it).
type LockRow struct {
	Resource       string `json:"r"`
	Owner          string `json:"o,omitempty"`
	HighestFence   uint64 `json:"f"`
	SinceMs        int64  `json:"s,omitempty"`
	ExpiresAtMs    int64  `json:"e,omitempty"`
	Waiters        int    `json:"w,omitempty"`
	LongestSinceMs int64  `json:"ws,omitempty"`
	// Permits is a counting semaphore's N (its row holds the queue; its
	// slots are rows of their own); absent for an exclusive lock.
	Permits uint64 `json:"p,omitempty"`
	// LockSet, when the holder holds the lock as a member of a lock set,
	// is the whole set (sorted); absent otherwise.
	LockSet []string `json:"ls,omitempty"`
	// Readers, when a read/write lock's readers hold it, are each
	// reader's lease, in the record's order (no writer holds it then:
	// Owner is ""); absent otherwise.
	Readers []ReaderRow `json:"rd,omitempty"`
	// Modes, for a read/write lock (readers hold it, or a reader waits),
	// is its queue's modes head first, one letter a waiter: ModeLetterWrite
	// a writer, ModeLetterRead a reader; absent otherwise (every waiter
	// then wants the lock exclusively).
	Modes string `json:"m,omitempty"`
}

// ReaderRow is one reader of a LockRow: its identity, lease, fence (the
// last writer's), when it was granted and when it expires unless renewed.
type ReaderRow struct {
	Owner       string `json:"o"`
	Lease       string `json:"l"`
	Fence       uint64 `json:"f"`
	SinceMs     int64  `json:"s"`
	ExpiresAtMs int64  `json:"e"`
}

// The letters of LockRow.Modes.
const (
	ModeLetterWrite = 'w'
	ModeLetterRead  = 'r'
)

// RowsOf is l in the lean form.
func RowsOf(l LockList) LockRows {
	out := LockRows{Next: l.Next, Rows: make([]LockRow, len(l.Locks))}
	for i := range l.Locks {
		v := &l.Locks[i]
		out.ReadAtMs = v.ReadAt.UnixMilli()
		r := LockRow{Resource: v.Resource, HighestFence: v.HighestFence, Waiters: len(v.Waiters), Permits: v.Permits}
		if h := v.Holder; h != nil {
			r.Owner, r.SinceMs, r.ExpiresAtMs, r.LockSet = h.Owner, h.Since.UnixMilli(), h.ExpiresAt.UnixMilli(), h.LockSet
		}
		if len(v.Waiters) > 0 && !v.Waiters[0].Since.IsZero() {
			r.LongestSinceMs = v.Waiters[0].Since.UnixMilli()
		}
		for _, h := range v.Readers {
			r.Readers = append(r.Readers, ReaderRow{Owner: h.Owner, Lease: h.Lease, Fence: h.Fence, SinceMs: h.Since.UnixMilli(), ExpiresAtMs: h.ExpiresAt.UnixMilli()})
		}
		r.Modes = queueModes(v)
		out.Rows[i] = r
	}
	return out
}

// queueModes is LockRow.Modes of v.
func queueModes(v *LockStatus) string {
	read := len(v.Readers) > 0
	for _, w := range v.Waiters {
		read = read || w.Read
	}
	if !read || len(v.Waiters) == 0 {
		return ""
	}
	b := make([]byte, len(v.Waiters))
	for i, w := range v.Waiters {
		b[i] = ModeLetterWrite
		if w.Read {
			b[i] = ModeLetterRead
		}
	}
	return string(b)
}

// ReadAt is the read's instant.
func (l *LockRows) ReadAt() time.Time { return time.UnixMilli(l.ReadAtMs).UTC() }
