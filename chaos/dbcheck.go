package chaos

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/fencegate/fencegate/chaos/chaosproc"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/wire"
)

// effect is one row of the services' business table.
type effect struct {
	resource, op, payload, grant string
	fence, seq                   uint64
}

// segKey names one accepted segment.
type segKey struct {
	resource   string
	fence, seq uint64
}

// loadEffects reads the business table in insertion order. Writes of one
// resource serialize on its fence row, so per resource this is commit
// order.
func loadEffects(ctx context.Context, db *sql.DB) ([]effect, error) {
	rows, err := db.QueryContext(ctx, `SELECT resource, fence, seq, operation_id, payload_digest, grant_digest FROM `+chaosproc.EffectsTable+` ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("chaos: read effects: %w", err)
	}
	defer rows.Close()
	var out []effect
	for rows.Next() {
		var e effect
		var fence, seq int64
		if err := rows.Scan(&e.resource, &fence, &seq, &e.op, &e.payload, &e.grant); err != nil {
			return nil, err
		}
		e.fence, e.seq = uint64(fence), uint64(seq)
		out = append(out, e)
	}
	return out, rows.Err()
}

// loadReceipts reads the gate's receipts (table of package sqlgate, with
// its default prefix): payload digest by segment.
func loadReceipts(ctx context.Context, db *sql.DB) (map[segKey]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT resource, fence, seq, payload_digest FROM `+sqlgate.PrefixDefault+`receipts`)
	if err != nil {
		return nil, fmt.Errorf("chaos: read receipts: %w", err)
	}
	defer rows.Close()
	out := map[segKey]string{}
	for rows.Next() {
		var k segKey
		var fence, seq int64
		var payload []byte
		if err := rows.Scan(&k.resource, &fence, &seq, &payload); err != nil {
			return nil, err
		}
		k.fence, k.seq = uint64(fence), uint64(seq)
		out[k] = digestText(payload)
	}
	return out, rows.Err()
}

// digestText accepts a digest stored as 32 bytes or as "sha256:<hex>".
func digestText(b []byte) string {
	if len(b) == 32 {
		return "sha256:" + hex.EncodeToString(b)
	}
	return strings.TrimSpace(string(b))
}

// countEffects checks the business table against itself (fence order,
// one grant per fence) and, unless the run is the mutant (which keeps no
// receipts), against the receipts. rw are the read/write locks.
func countEffects(effects []effect, receipts map[segKey]string, mutant bool, rw []string, c *Counts) {
	highest := map[string]uint64{}
	grants := map[segKey]string{} // (resource, fence, 0) → grant
	seen := map[segKey]string{}
	for _, e := range effects {
		if e.fence < highest[e.resource] {
			c.StaleAccepts++
			if _, _, slot := wire.SlotOf(e.resource); slot {
				c.StaleAcceptsOnSlots++
			}
			if slices.Contains(rw, e.resource) {
				c.StaleAcceptsOnRWLocks++
			}
		}
		highest[e.resource] = max(highest[e.resource], e.fence)
		fk := segKey{e.resource, e.fence, 0}
		if g, ok := grants[fk]; ok && g != e.grant {
			c.FenceReusedAtGate++
		}
		grants[fk] = e.grant
		seen[segKey{e.resource, e.fence, e.seq}] = e.payload
	}
	if mutant {
		return
	}
	for k, p := range seen {
		if receipts[k] != p {
			c.EffectsWithoutReceipt++
		}
	}
	for k, p := range receipts {
		if seen[k] != p {
			c.ReceiptsWithoutEffect++
		}
	}
	// Two effect rows for one segment would be a business change applied
	// twice: it shows up as fewer distinct segments than rows.
	c.EffectsWithoutReceipt += len(effects) - len(seen)
}
