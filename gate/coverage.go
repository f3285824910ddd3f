package gate

// Coverage is a SQL gate's measure of "fence checks cover 100% of
// protected mutations": the rows written to its protected tables, each
// counted by the database's own guard on the table as it is written
// (docs/guarantees.md, "Coverage"). A row is gated when its own resource
// was accepted in the same transaction (in enforce mode, for a table in
// enforce mode); every other row is ungated, which a table in enforce
// mode refuses (so it is never written, and never counted) and a table
// in shadow mode lets through and counts. Counts are of committed
// writes: a transaction rolled back takes its counts with it.
type Coverage struct {
	// Gated counts protected rows written under an accept of their own
	// resource.
	Gated uint64 `json:"gated"`
	// Ungated counts protected rows written without one (shadow-mode
	// tables only).
	Ungated uint64 `json:"ungated"`
	// Tables are the protected tables, by name.
	Tables []ProtectedTable `json:"tables"`
}

// ProtectedTable is one table under a gate's coverage guard.
type ProtectedTable struct {
	// Table is the table's name.
	Table string `json:"table"`
	// Mode is the guard's: enforce refuses an ungated row, shadow counts
	// it.
	Mode Mode `json:"mode"`
	// Resource is the column (or SQL expression over the row's columns)
	// that names a row's resource; "" when the gate does not know it (a
	// table protected before the guard was per resource, not yet
	// protected again), in which case every row is ungated.
	Resource string `json:"resource"`
	// Ungated counts this table's ungated rows.
	Ungated uint64 `json:"ungated"`
}

// Ratio is Gated / (Gated + Ungated), and 1 when both are 0 (nothing
// written is nothing missed).
func (c Coverage) Ratio() float64 {
	total := c.Gated + c.Ungated
	if total == 0 {
		return 1
	}
	return float64(c.Gated) / float64(total)
}
