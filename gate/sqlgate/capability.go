package sqlgate

import "github.com/fencegate/fencegate/gate"

// Capability reports what the gate offers every resource it guards, on
// both dialects: fenced write. The highest fence is stored in the same
// transaction as each accepted change, and the database itself refuses a
// lower one (SQLite: a receipt that does not follow its resource's last;
// PostgreSQL: a trigger on highest_fence). Job targets (ApplyJob) are such
// resources too.
func (g *Gate) Capability() gate.Capability { return gate.CapabilityFencedWrite }
