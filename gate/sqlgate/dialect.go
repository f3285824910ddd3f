package sqlgate

import (
	"fmt"
	"regexp"
)

// Dialect is what differs between the SQL databases the gate runs on:
// placeholders, row locking, where the fence state lives, identity
// columns, and what the coverage guard takes as the mark of an accept.
// Use SQLite or Postgres.
//
// Since schema version 5 the two keep the fence state differently, each
// the cheaper way for its own locking. SQLite has one writer at a time, so
// every read after BEGIN IMMEDIATE is current: the state is the resource's
// last receipt (highest fence, its root, last segment, grant), and an
// accept writes the receipt alone. PostgreSQL serializes applies of one
// resource on its row lock, and after waiting for that lock only the
// locked row is current (the statement's snapshot predates the wait), so
// the state lives in the resource row and an accept updates it with the
// receipt.
type Dialect struct {
	name string
	// placeholders turns the $N placeholders the queries are written with
	// into the dialect's own.
	placeholders func(q string) string
	// forUpdate is appended to the fence-row read (alias r) to lock the row.
	forUpdate string
	// stateCols and stateFrom read a resource's gate.FenceState: stateCols
	// selects resource, mode, highest fence, root, last segment, last
	// grant, min policy generation, paused, paused reason, last grant's
	// issued-at ms, fence floor, floor-at ms; stateFrom
	// names {p}resources as r, and may use $1 (the resource).
	stateCols, stateFrom string
	// guardProbe is appended to the fence-row read's columns: a boolean
	// "some table is protected", read under the same lock as the row, so
	// an apply marks (or stores first) only where a guard could look.
	guardProbe string
	// mark (SQLite) marks an accept of a resource for the coverage guard:
	// a row of {p}apply_marks naming the resource ($1) and whether the
	// accept was in enforce mode ($2), which finishAccept deletes. ""
	// where the stored accept is itself the mark (PostgreSQL): there a
	// guarded accept is stored before the business change
	// (storesMarkFirst).
	mark string
	// storesMarkFirst: the accept's receipt is the guard's mark, so an
	// accept where some table is protected stores before the business
	// change rather than after it.
	storesMarkFirst bool
	// finishAccept is one statement that stores an accept: the receipt
	// and the new fence state (SQLite: also the mark's count of guarded
	// writes added to the resource, and the mark deleted). Arguments:
	// resource, fence, seq, operation ID, operation root, payload digest,
	// grant digest, accepted-at ms, mode, grant issued-at ms (the new
	// state is the receipt's fence, seq, root and grant).
	// finishAcceptUnguarded, if set, is the same for a transaction never
	// marked (no table is protected).
	finishAccept, finishAcceptUnguarded string
	// speculate, if set, is lockLookup that also stores the accept the
	// locked state admits, in the same round trip ("" where the dialect
	// does not speculate). It reads what lockLookup reads plus the number
	// of receipts it inserted (0 or 1), and inserts only where
	// gate.Decide is certain to accept once the status is proven: an
	// enforced, unpaused resource, policy generation at or above its
	// minimum, the fence above highestFence at segment 1 or the next
	// segment under the same root and grant. Stored before the business
	// change, the receipt is also the coverage guard's mark. Arguments:
	// finishAccept's first nine, the grant's policy generation, then its
	// issued-at ms, then the skew bound in ms. See Gate.speculate.
	speculate string
	// speculateStore, if set, is speculate's storing half alone (same
	// arguments), for transactions that send it in one round trip behind
	// lockLookup: by then the row is locked, and it stores exactly where
	// speculate would. Its row count is the receipts it inserted.
	speculateStore string
	// fastStore stores an accept decided on a cached state (fast.go)
	// where the stored state is exactly that one, in one statement that
	// reads nothing back: its row count is the receipts it inserted, 0
	// or 1. Arguments: finishAccept's ten, then the cached state's
	// columns in stateCols' order after the resource (mode, highest
	// fence, root, last segment, last grant, min policy generation,
	// paused, paused reason, grant issued-at ms, fence floor, floor-at
	// ms). It stores nothing where the state differs in any of them, and
	// (SQLite) where some table is protected or the resource has no
	// receipt yet. "" where the dialect has none.
	fastStore string
	// serial is the type of an auto-assigned integer primary key.
	serial string
	// clustered follows CREATE TABLE (…) for tables stored in key order.
	clustered string
	// guard returns the DDL that (re)installs the coverage guard of one
	// protected table (guard.go).
	guard func(s guardSpec) []string
	// guardSetup is migration 1's guard DDL (trigger function, marker),
	// which migration 9 replaces.
	guardSetup string
	// guardRows is migration 9: the guard admits a protected row only
	// under an accept of the row's own resource in this transaction
	// (guard.go); Gate.reguard then reinstalls every protected table's
	// guard and drops dropGuardSetup's leftovers.
	guardRows, dropGuardSetup string
	// invariants is migration 2: triggers refusing a lower highest_fence
	// and any change to a receipt. One statement per line.
	invariants string
	// acceptEntry is migration 3: the schema-3 one-statement accept ("" where
	// one plain statement does it). Inside a trigger body the ";" starts a
	// line: splitStatements splits at lines ending in ";".
	acceptEntry string
	// segmentChain is migration 4's trigger: a receipt with seq > 1 needs
	// the receipt of seq-1 under the same resource, fence and operation.
	segmentChain string
	// compact is migration 5: digests stored as 32 bytes, receipts
	// without the columns they imply (ID, outcome), and the fence state
	// where this dialect keeps it (see Dialect).
	compact string
	// issueTimes is migration 6: the IssuedAt of the grant at highestFence
	// kept with the fence state, and the floor and instant of the last
	// Resume in the resource row (the regression rule needs both).
	issueTimes string
	// stateInOrder is migration 7: where the database checks segment
	// order ("" where migration 4's receipt trigger still does).
	stateInOrder string
	// dropImplied is migration 8: it drops an invariant trigger that
	// another one implies ("" where there is none).
	dropImplied string
	// orderInFunction is migration 10: migration 7's order check held by
	// a trigger whose work the database does not rebuild per statement
	// ("" where migration 4's receipt trigger still does it).
	orderInFunction string
}

// Name returns "sqlite" or "postgres".
func (d *Dialect) Name() string { return d.name }

// identRE is what a table prefix or protected table name may be: a plain
// lower-case SQL identifier, so it can be spliced into DDL safely.
var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,47}$`)

func checkIdent(what, s string) error {
	if !identRE.MatchString(s) {
		return fmt.Errorf("sqlgate: %s %q: want [a-z_][a-z0-9_]{0,47}", what, s)
	}
	return nil
}
