package chaos

import (
	"fmt"
	"sort"

	"github.com/fencegate/fencegate/chaos/record"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/wire"
)

// Counts are the direct checks of a run, each independent of porcupine.
// Every field but the Expected ones must be 0.
type Counts struct {
	// StaleAccepts: writes applied (business table, in commit order per
	// resource) under a fence below one already applied.
	StaleAccepts int
	// StaleAcceptsOnSlots are the StaleAccepts on counting semaphores'
	// slots (counted in StaleAccepts too): where the mutant run's
	// semaphore check must say Illegal.
	StaleAcceptsOnSlots int
	// StaleAcceptsOnRWLocks are the StaleAccepts on read/write locks
	// (counted in StaleAccepts too): where the mutant run's read/write
	// check must say Illegal.
	StaleAcceptsOnRWLocks int
	// FenceReusedAtGate: a resource applied writes of two grants under one
	// fence.
	FenceReusedAtGate int
	// FenceReusedByRegistry: the registry answered two grants with one
	// fence on one resource within one history of its store (between
	// restores).
	FenceReusedByRegistry int
	// RequestIDTwoGrants: one (owner, request ID) answered with two grants
	// within one history of the store.
	RequestIDTwoGrants int
	// ReceiptsWithoutEffect, EffectsWithoutReceipt: a receipt whose
	// business row is missing (or differs), and the reverse.
	ReceiptsWithoutEffect int
	EffectsWithoutReceipt int
	// SpuriousPauses: FENCE_REGRESSION decisions (each pauses its
	// resource) while no restore was unrepaired for the resource.
	SpuriousPauses int
	// RestoresUndetected: restores after which no resource paused.
	RestoresUndetected int

	// ExpectedReissues: fences the restored registry handed out again
	// (different grants, one fence, across a restore): what the gate must
	// catch. Not a violation.
	ExpectedReissues int
	// ExpectedPauses: FENCE_REGRESSION decisions inside a restore's
	// window. Not a violation.
	ExpectedPauses int
	// RestoresForgotNothing: restores with no grant answered between
	// their snapshot and themselves, so nothing to hand out again and no
	// pause to require. Not a violation; the run's report shows it.
	RestoresForgotNothing int
	// StoreWentBack: times the store went back by itself (ZooKeeper lost
	// transactions it had acknowledged), seen by the orchestrator's
	// watcher: each is a boundary between histories of the store, as a
	// restore is, that no pause has to follow. Not a violation of
	// fencegate's; docs/guarantees.md, "On ZooKeeper".
	StoreWentBack int
}

// Violations lists the non-zero violation counts.
func (c Counts) Violations() []string {
	var out []string
	for _, v := range []struct {
		name string
		n    int
	}{
		{"stale accepts", c.StaleAccepts}, {"fence reused across grants at the gate", c.FenceReusedAtGate},
		{"fence reused across grants by the registry", c.FenceReusedByRegistry},
		{"request ID answered by two grants", c.RequestIDTwoGrants},
		{"receipts without the business change", c.ReceiptsWithoutEffect},
		{"business changes without a receipt", c.EffectsWithoutReceipt},
		{"spurious pauses", c.SpuriousPauses}, {"restores not ending in a pause", c.RestoresUndetected},
	} {
		if v.n != 0 {
			out = append(out, fmt.Sprintf("%s: %d", v.name, v.n))
		}
	}
	return out
}

// countRegistry counts fence and request-ID reuse in the registry's
// answers, per history of the store. A fence granted again across a
// restore is expected when the restore could have forgotten it, and a
// violation when its snapshot held it: the first grant was answered
// before the snapshot began (the snapshot syncs its source first, so
// whatever was answered before is in it), so the restored store knew the
// fence (the simulator judges the same way, by the restored record).
func countRegistry(h *History, c *Counts) {
	rs := h.restores()
	type fenceKey struct {
		res   string
		fence uint64
	}
	type reqKey struct{ owner, id string }
	fenceGrants := map[fenceKey]map[string]grantSeen{} // by grant digest
	reqGrants := map[reqKey]map[string]grantSeen{}
	for _, e := range h.Events {
		if (e.Kind != record.KindAcquire && e.Kind != record.KindQuery) || e.Result != record.ResultOK || e.GrantDigest == "" {
			continue
		}
		if _, reader := wire.ReadOf(e.Resource); reader {
			continue // readers share the last writer's fence by design; the read/write model checks them
		}
		g := grantSeen{era: era(rs, e.GrantIssuedMs*1e6), answeredNs: e.RetNs}
		fk, rk := fenceKey{e.Resource, e.Fence}, reqKey{e.Owner, e.RequestID}
		if fenceGrants[fk] == nil {
			fenceGrants[fk] = map[string]grantSeen{}
		}
		if reqGrants[rk] == nil {
			reqGrants[rk] = map[string]grantSeen{}
		}
		fenceGrants[fk][e.GrantDigest] = fenceGrants[fk][e.GrantDigest].first(g)
		reqGrants[rk][e.GrantDigest] = reqGrants[rk][e.GrantDigest].first(g)
	}
	for _, gs := range fenceGrants {
		same, cross, held := splitByEra(gs, rs)
		c.FenceReusedByRegistry += same + held
		c.ExpectedReissues += cross
	}
	for _, gs := range reqGrants {
		same, _, _ := splitByEra(gs, rs)
		c.RequestIDTwoGrants += same
	}
}

// grantSeen is one grant as answered: the era it was issued in, and when
// it was first answered (0: not yet seen).
type grantSeen struct {
	era        int
	answeredNs int64
}

// first merges two answers of one grant: the earlier answer counts.
func (g grantSeen) first(o grantSeen) grantSeen {
	if g.answeredNs == 0 || o.answeredNs < g.answeredNs {
		return o
	}
	return g
}

// splitByEra counts the extra grants of one key inside one era (same: a
// violation), and the eras after the first that grant it again: held
// when a restore between holds an earlier grant in its snapshot (a
// violation), cross otherwise (the restore or regression forgot it).
func splitByEra(grants map[string]grantSeen, rs []record.Event) (same, cross, held int) {
	perEra := map[int]int{}
	var eras []int
	for _, g := range grants {
		if perEra[g.era]++; perEra[g.era] == 1 {
			eras = append(eras, g.era)
		}
	}
	sort.Ints(eras)
	for _, er := range eras {
		if n := perEra[er]; er >= 0 && n > 1 {
			same += n - 1
		}
	}
	for _, er := range eras[1:] {
		if er >= 0 && snapshotHeld(grants, rs, er) {
			held++
		} else {
			cross++
		}
	}
	return same, cross, held
}

// snapshotHeld reports whether a grant of an era before er was answered
// before the snapshot of a restore that began between its era and er.
func snapshotHeld(grants map[string]grantSeen, rs []record.Event, er int) bool {
	for _, g := range grants {
		if g.era < 0 || g.era >= er {
			continue
		}
		for _, r := range rs[g.era:er] {
			if r.Kind == record.KindRestore && r.SnapshotNs != 0 && g.answeredNs < r.SnapshotNs {
				return true
			}
		}
	}
	return false
}

// countPauses classifies every FENCE_REGRESSION: inside a restore's (or
// a regression's) window for its resource (from it until the resource's
// repair finished) it is expected; anywhere else it is spurious. It also
// counts restores after which nothing paused (of those that forgot a
// grant) and no gate refused a grant as POLICY_STALE, and the
// regressions.
func countPauses(h *History, c *Counts) {
	rs := h.restores()
	detected := make([]bool, len(rs))
	for i, r := range rs {
		switch {
		case r.Kind == record.KindRegression:
			detected[i] = true // a regression need not end in a pause: the registry may issue nothing it forgot
			c.StoreWentBack++
		case !forgotGrants(h, r):
			detected[i] = true // nothing for a gate to catch
			c.RestoresForgotNothing++
		}
	}
	for _, e := range h.Events {
		if e.Kind == record.KindDecide && e.Result == string(gate.PolicyStale) && !e.Mutant {
			// A gate refusing the restored registry's grants as older than
			// the policy generation a repair since the snapshot gave it
			// (seed 212: a regression's repair, then a restore from before
			// it) caught the restore without a pause.
			if i := openRestore(h, rs, e.Resource, e.CallNs); i >= 0 {
				detected[i] = true
			}
			continue
		}
		if e.Kind != record.KindDecide || e.Result != string(gate.FenceRegression) || e.Mutant {
			continue
		}
		if i := openRestore(h, rs, e.Resource, e.CallNs); i >= 0 {
			c.ExpectedPauses++
			detected[i] = true
		} else {
			c.SpuriousPauses++
		}
	}
	for _, d := range detected {
		if !d {
			c.RestoresUndetected++
		}
	}
}

// forgotGrants reports whether restore r forgot a grant: one answered
// after its snapshot began and before it began. With no grant there (the
// store answered none: seed 195's ensemble elected for 25 s after the
// snapshot), nothing is handed out again and no gate can pause. A restore
// recorded without its snapshot's instant is taken to have forgotten.
func forgotGrants(h *History, r record.Event) bool {
	if r.SnapshotNs == 0 {
		return true
	}
	for _, e := range h.Events {
		if (e.Kind == record.KindAcquire || e.Kind == record.KindQuery) && e.Result == record.ResultOK &&
			e.GrantDigest != "" && e.RetNs > r.SnapshotNs && e.RetNs < r.CallNs {
			return true
		}
	}
	return false
}

// openRestore returns the index of the restore still unrepaired for res
// at t, or -1.
func openRestore(h *History, rs []record.Event, res string, t int64) int {
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i]
		if r.CallNs > t {
			continue
		}
		for _, e := range h.Events {
			if e.Kind == record.KindRepair && e.Resource == res && e.CallNs >= r.CallNs && e.RetNs <= t {
				return -1
			}
		}
		return i
	}
	return -1
}
