package conformance

import (
	"context"
	"slices"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// This file is the coverage guard's table, which the SQL adapters run
// (sqlgate on SQLite, on PostgreSQL through database/sql and through pgx,
// and the gate inside PostgreSQL): the attacks of issue 43 on the guard
// of a protected table, each a row that must leave the table, the state
// and the coverage count as they were, and the rows an accept must open.
// Each attack row's negative control (GuardFails) runs it with the mark
// forged by a writer holding the privilege its role must not have, and
// must see the row fail.

// Guarded is a Harness whose protected tables the database itself
// guards: Apply's effect log is the business table, each row naming its
// resource in a column resource.
type Guarded interface {
	Harness
	// Protect protects the effect log in mode, its rows' resource in the
	// column resource.
	Protect(ctx context.Context, mode gate.Mode) error
	// Session opens a connection of its own as the writer: the role the
	// application's code runs as (for the Go gate, the gate's own role;
	// for the gate inside PostgreSQL, a role granted fencegate_writer).
	// The harness closes it when the test ends.
	Session(ctx context.Context) (Session, error)
	// Coverage reads the gate's coverage counters.
	Coverage(ctx context.Context) (gate.Coverage, error)
	// Refused reports whether err is the guard's refusal of a write
	// (FG020).
	Refused(err error) bool
}

// Writer writes the protected table on one connection. In a transaction
// a refused write leaves it usable (the harness writes under a
// savepoint).
type Writer interface {
	// Write inserts a row of resource carrying payload.
	Write(ctx context.Context, resource, payload string) error
	// Move rewrites every row of resource from as a row of resource to.
	Move(ctx context.Context, from, to string) error
	// Loosen does what a writer without the gate's privileges can do to
	// pass for an accept: set the marks earlier guards trusted (on
	// PostgreSQL the settings fencegate.apply and fencegate.writes) in
	// the transaction (local) or for the session; on SQLite, which has
	// no settings, turn the connection's foreign keys off (at session
	// level; inside a transaction SQLite ignores it).
	Loosen(ctx context.Context, local bool) error
	// Forge records, in the open transaction, what the adapter takes as
	// the mark of an accept of resource, with the privilege to write the
	// gate's own tables (granted to the writer's role for the purpose
	// where it has none): the guard rows' negative control.
	Forge(ctx context.Context, resource string) error
}

// Session is one connection as the writer, with at most one transaction
// open; without one, each write commits on its own.
type Session interface {
	Writer
	Begin(ctx context.Context) error
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
	// Apply runs m, sent by caller, through the gate on this connection,
	// body being the business change (given the connection): in the open
	// transaction where the adapter composes into a caller's transaction
	// (a rejection leaves it usable), else in a transaction of its own
	// on the connection, before the open one's first statement (RunPgx).
	Apply(ctx context.Context, caller string, m *gate.Mutation, body func(context.Context, Writer) error) (gate.Receipt, error)
}

// GuardCase is one named row of the guard table; Attack rows have a
// negative control.
type GuardCase struct {
	Name   string
	Attack bool
	Run    func(t T, e *GuardEnv)
}

// GuardEnv is a guard row's world: Env with a Guarded harness whose
// effect log is protected in enforce mode once the row has set up its
// resources, and, for the negative control, forged marks.
type GuardEnv struct {
	*Env
	G     Guarded
	forge bool
	tb    testing.TB
}

// GuardCases returns the guard table in order.
func GuardCases() []GuardCase {
	return []GuardCase{
		{"AcceptOpensItsOwnRows", false, guardOwnRows},
		{"SettingOnAnotherConnection", true, guardSettingElsewhere},
		{"SessionSettingThenAutocommit", true, guardSessionSetting},
		{"StaleApplyThenWriteInItsTransaction", true, guardStaleThenWrite},
		{"CallbackLeavesItsConnectionLoose", true, guardCallbackLoose},
		{"AcceptOpensNoOtherResource", true, guardCrossResource},
		{"UpdateMovingARowNeedsBothResources", true, guardMove},
		{"ShadowPassThroughOpensNothing", true, guardShadowPassThrough},
		{"ShadowModeAcceptOpensNoEnforcedTable", true, guardShadowAccept},
		{"ShadowTableCountsUngated", false, guardShadowTable},
	}
}

// RunGuard runs the guard table against the adapter newHarness builds
// (its harnesses must implement Guarded), each row on a fresh harness;
// with parallel, the rows run in parallel (their harnesses must not
// share anything).
func RunGuard(t *testing.T, newHarness Factory, parallel bool) {
	for _, c := range GuardCases() {
		t.Run(c.Name, func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			c.Run(t, newGuardEnv(t, newHarness, false))
		})
	}
}

// GuardFails runs the attack row name with the mark forged (Writer.Forge
// before each attempted write) and returns its first failure, or "" if
// it passed: an adapter's negative control, which fails when it returns
// "" (the row could not see the write the forged mark let through).
func GuardFails(t *testing.T, newHarness Factory, name string) string {
	t.Helper()
	for _, c := range GuardCases() {
		if c.Name == name && c.Attack {
			return failures(func(rec T) { c.Run(rec, newGuardEnv(t, newHarness, true)) })
		}
	}
	t.Fatalf("conformance: no attack row %q", name)
	return ""
}

func newGuardEnv(t testing.TB, newHarness Factory, forge bool) *GuardEnv {
	e := NewEnv(t, newHarness)
	g, ok := e.H.(Guarded)
	if !ok {
		t.Fatalf("conformance: the harness %T is not Guarded", e.H)
	}
	return &GuardEnv{Env: e, G: g, forge: forge, tb: t}
}

// session opens a writer session.
func (e *GuardEnv) session(t T) Session {
	t.Helper()
	s, err := e.G.Session(e.Ctx)
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	return s
}

// protect protects the effect log in mode.
func (e *GuardEnv) protect(t T, mode gate.Mode) {
	t.Helper()
	if err := e.G.Protect(e.Ctx, mode); err != nil {
		t.Fatalf("protect %s: %v", mode, err)
	}
}

// attempt is an attack's write of resource through w: refused by the
// guard, unless the negative control forged the mark first (then the
// write lands, and the row fails here). It returns the refusal, for a
// business change to return.
func (e *GuardEnv) attempt(t T, w Writer, resource, payload string) error {
	t.Helper()
	if e.forge {
		if err := w.Forge(e.Ctx, resource); err != nil {
			t.Fatalf("forge the mark of %s: %v", resource, err)
		}
	}
	err := w.Write(e.Ctx, resource, payload)
	if err == nil {
		t.Fatalf("the guard admitted a write of %s outside an accept of it", resource)
	}
	if !e.G.Refused(err) {
		t.Fatalf("the write of %s failed, but not by the guard's refusal (FG020): %v", resource, err)
	}
	return err
}

// attemptAlone is attempt on a session without a transaction: the write
// commits on its own (with a forged mark, in a transaction with it).
func (e *GuardEnv) attemptAlone(t T, s Session, resource, payload string) {
	t.Helper()
	if !e.forge {
		e.attempt(t, s, resource, payload)
		return
	}
	if err := s.Begin(e.Ctx); err != nil {
		t.Fatalf("begin: %v", err)
	}
	defer s.Rollback(e.Ctx)
	e.attempt(t, s, resource, payload)
}

// guardSnap is what an attack must leave as it was.
type guardSnap struct {
	resources map[string]snapshot
	coverage  gate.Coverage
}

func (e *GuardEnv) snap(t T, resources ...string) guardSnap {
	t.Helper()
	s := guardSnap{resources: map[string]snapshot{}}
	for _, r := range resources {
		s.resources[r] = snap(t, e.Env, e.H, r)
	}
	s.coverage = e.coverage(t)
	return s
}

func (e *GuardEnv) coverage(t T) gate.Coverage {
	t.Helper()
	c, err := e.G.Coverage(e.Ctx)
	if err != nil {
		t.Fatalf("coverage: %v", err)
	}
	return c
}

// unchanged fails unless the resources' state, effects and records and
// the coverage counts equal before.
func (e *GuardEnv) unchanged(t T, before guardSnap, what string) {
	t.Helper()
	for r, s := range before.resources {
		unchanged(t, e.Env, e.H, r, s, what)
	}
	if c := e.coverage(t); c.Gated != before.coverage.Gated || c.Ungated != before.coverage.Ungated {
		t.Fatalf("%s changed the coverage counts: %+v → %+v", what, before.coverage, c)
	}
}

// owned sets up the rows' world: B holds fence 2 on each resource and has
// written one effect under it; then the effect log is protected in
// enforce mode.
func (e *GuardEnv) owned(t T, resources ...string) {
	t.Helper()
	for _, r := range resources {
		mustAccept(t, e.Env, e.H, e.Mut(r, 2, "op-b", 1, "b1"), "b1")
	}
	e.protect(t, gate.ModeEnforce)
}

// stale is A's envelope for r: fence 1, its grant expired.
func (e *GuardEnv) stale(r string) *gate.Mutation {
	return e.Iss.WithStatus(e.Mut(r, 1, "op-a", 1, "stale"), grant.StateExpired)
}

// closeSession rolls back whatever transaction a failed row left open.
func closeSession(_ T, s Session, e *GuardEnv) {
	_ = s.Rollback(e.Ctx)
}

func guardOwnRows(t T, e *GuardEnv) {
	const a = "guard/own"
	e.owned(t, a)
	s := e.session(t)
	defer closeSession(t, s, e)
	before := e.coverage(t)
	_, err := s.Apply(e.Ctx, Owner, e.Mut(a, 2, "op-b", 2, "b2"), func(ctx context.Context, w Writer) error {
		if err := w.Write(ctx, a, "b2"); err != nil {
			return err
		}
		return w.Write(ctx, a, "b2+")
	})
	if err != nil {
		t.Fatalf("an accept writing its own resource's rows: %v", err)
	}
	if fx := effects(t, e.Env, e.H, a); !slices.Equal(fx, []string{"b1", "b2", "b2+"}) {
		t.Fatalf("effects %q", fx)
	}
	if c := e.coverage(t); c.Gated != before.Gated+2 || c.Ungated != before.Ungated {
		t.Fatalf("coverage %+v → %+v, want 2 more gated", before, c)
	}
}

// guardSettingElsewhere: another connection, outside any Apply, sets the
// old guard's mark in its transaction and writes (issue 43, attack 1).
func guardSettingElsewhere(t T, e *GuardEnv) {
	const r = "guard/elsewhere"
	e.owned(t, r)
	before := e.snap(t, r)
	s := e.session(t)
	defer closeSession(t, s, e)
	if err := s.Begin(e.Ctx); err != nil {
		t.Fatalf("begin: %v", err)
	}
	if err := s.Loosen(e.Ctx, true); err != nil {
		t.Fatalf("loosen: %v", err)
	}
	e.attempt(t, s, r, "100 (A, stale)")
	_ = s.Rollback(e.Ctx)
	e.unchanged(t, before, "a write with a transaction-local setting")
}

// guardSessionSetting: the same at session level, then an autocommit
// write (attack 2).
func guardSessionSetting(t T, e *GuardEnv) {
	const r = "guard/session"
	e.owned(t, r)
	before := e.snap(t, r)
	s := e.session(t)
	defer closeSession(t, s, e)
	if err := s.Loosen(e.Ctx, false); err != nil {
		t.Fatalf("loosen: %v", err)
	}
	e.attemptAlone(t, s, r, "100 (A, stale)")
	e.unchanged(t, before, "an autocommit write after a session setting")
}

// guardStaleThenWrite: A's own stale Apply is answered STALE_OWNER, then
// A sets the old mark and writes in the same transaction (attack 3).
func guardStaleThenWrite(t T, e *GuardEnv) {
	const r = "guard/stale"
	e.owned(t, r)
	before := e.snap(t, r)
	s := e.session(t)
	defer closeSession(t, s, e)
	if err := s.Begin(e.Ctx); err != nil {
		t.Fatalf("begin: %v", err)
	}
	ran := false
	_, err := s.Apply(e.Ctx, Owner, e.stale(r), func(context.Context, Writer) error { ran = true; return nil })
	wantOutcome(t, err, gate.StaleOwner)
	if ran {
		t.Fatalf("the business change of a stale write ran")
	}
	if err := s.Loosen(e.Ctx, true); err != nil {
		t.Fatalf("loosen: %v", err)
	}
	e.attempt(t, s, r, "100 (A, stale)")
	_ = s.Rollback(e.Ctx)
	e.unchanged(t, before, "a write after a stale Apply in its transaction")
}

// guardCallbackLoose: a genuine accept's business change sets the old
// mark at session level; a later plain write on the same connection,
// outside any Apply (attack 4).
func guardCallbackLoose(t T, e *GuardEnv) {
	const r = "guard/loose"
	e.owned(t, r)
	s := e.session(t)
	defer closeSession(t, s, e)
	_, err := s.Apply(e.Ctx, Owner, e.Mut(r, 2, "op-b", 2, "b2"), func(ctx context.Context, w Writer) error {
		if err := w.Write(ctx, r, "b2"); err != nil {
			return err
		}
		return w.Loosen(ctx, false)
	})
	if err != nil {
		t.Fatalf("the genuine accept: %v", err)
	}
	before := e.snap(t, r)
	e.attemptAlone(t, s, r, "100 (later, no Apply)")
	e.unchanged(t, before, "a later write on the connection a business change loosened")
}

// guardCrossResource: an accept of a lets its business change write
// neither r's rows nor, after Apply in the same transaction, r's rows.
func guardCrossResource(t T, e *GuardEnv) {
	const a, r = "guard/cross-a", "guard/cross-r"
	e.owned(t, a, r)
	before := e.snap(t, a, r)
	s := e.session(t)
	defer closeSession(t, s, e)
	if err := s.Begin(e.Ctx); err != nil {
		t.Fatalf("begin: %v", err)
	}
	_, err := s.Apply(e.Ctx, Owner, e.Mut(a, 2, "op-b", 2, "b2"), func(ctx context.Context, w Writer) error {
		if err := w.Write(ctx, a, "b2"); err != nil {
			return err
		}
		return e.attempt(t, w, r, "cross")
	})
	if err == nil || !e.G.Refused(err) {
		t.Fatalf("the accept whose business change wrote another resource's row: %v", err)
	}
	e.attempt(t, s, r, "cross after Apply")
	_ = s.Rollback(e.Ctx)
	e.unchanged(t, before, "an accept of another resource")
}

// guardMove: an accept of a cannot move r's rows into a.
func guardMove(t T, e *GuardEnv) {
	const a, r = "guard/move-a", "guard/move-r"
	e.owned(t, a, r)
	before := e.snap(t, a, r)
	s := e.session(t)
	defer closeSession(t, s, e)
	_, err := s.Apply(e.Ctx, Owner, e.Mut(a, 2, "op-b", 2, "b2"), func(ctx context.Context, w Writer) error {
		if e.forge {
			if err := w.Forge(ctx, r); err != nil {
				return err
			}
		}
		return w.Move(ctx, r, a)
	})
	if err == nil {
		t.Fatalf("an accept of %s moved %s's rows into it", a, r)
	}
	if !e.G.Refused(err) {
		t.Fatalf("the move failed, but not by the guard's refusal: %v", err)
	}
	e.unchanged(t, before, "a move of another resource's rows")
}

// guardShadowPassThrough: a stale envelope for a resource in shadow mode
// is let through, not accepted: its business change and its transaction
// write no row of an enforced table, its own resource's or another's.
func guardShadowPassThrough(t T, e *GuardEnv) {
	const sh, r = "guard/shadow", "guard/enforced"
	if err := e.H.SetMode(e.Ctx, sh, gate.ModeShadow); err != nil {
		t.Fatalf("shadow: %v", err)
	}
	e.owned(t, sh, r)
	before := e.snap(t, r)
	beforeShadow := effects(t, e.Env, e.H, sh)
	s := e.session(t)
	defer closeSession(t, s, e)
	if err := s.Begin(e.Ctx); err != nil {
		t.Fatalf("begin: %v", err)
	}
	rc, err := s.Apply(e.Ctx, Owner, e.stale(sh), func(context.Context, Writer) error { return nil })
	if err != nil || rc.Outcome != gate.StaleOwner || rc.Mode != gate.ModeShadow {
		t.Fatalf("shadow mode must let the stale envelope through as STALE_OWNER: %+v %v", rc, err)
	}
	_, err = s.Apply(e.Ctx, Owner, e.stale(sh), func(ctx context.Context, w Writer) error {
		return e.attempt(t, w, r, "through shadow")
	})
	if err == nil || !e.G.Refused(err) {
		t.Fatalf("a shadow pass-through wrote an enforced table: %v", err)
	}
	e.attempt(t, s, r, "after shadow")
	e.attempt(t, s, sh, "after shadow")
	_ = s.Rollback(e.Ctx)
	e.unchanged(t, before, "a shadow-mode pass-through")
	if fx := effects(t, e.Env, e.H, sh); !slices.Equal(fx, beforeShadow) {
		t.Fatalf("the shadow resource's effects %q → %q", beforeShadow, fx)
	}
}

// guardShadowAccept: a genuine accept of a resource in shadow mode does
// not open its rows in an enforced table.
func guardShadowAccept(t T, e *GuardEnv) {
	const sh = "guard/shadow-accept"
	if err := e.H.SetMode(e.Ctx, sh, gate.ModeShadow); err != nil {
		t.Fatalf("shadow: %v", err)
	}
	e.owned(t, sh)
	beforeEffects := effects(t, e.Env, e.H, sh)
	beforeCov := e.coverage(t)
	s := e.session(t)
	defer closeSession(t, s, e)
	_, err := s.Apply(e.Ctx, Owner, e.Mut(sh, 3, "op-c", 1, "c1"), func(ctx context.Context, w Writer) error {
		return e.attempt(t, w, sh, "c1")
	})
	if err == nil || !e.G.Refused(err) {
		t.Fatalf("a shadow-mode accept wrote an enforced table: %v", err)
	}
	if fx := effects(t, e.Env, e.H, sh); !slices.Equal(fx, beforeEffects) {
		t.Fatalf("effects %q → %q", beforeEffects, fx)
	}
	if c := e.coverage(t); c.Gated != beforeCov.Gated || c.Ungated != beforeCov.Ungated {
		t.Fatalf("coverage %+v → %+v", beforeCov, c)
	}
}

// guardShadowTable: a table in shadow mode lets every write through and
// counts it: an accept's own rows as gated, the rest as ungated.
func guardShadowTable(t T, e *GuardEnv) {
	const a, r = "guard/shadow-table-a", "guard/shadow-table-r"
	for _, res := range []string{a, r} {
		mustAccept(t, e.Env, e.H, e.Mut(res, 2, "op-b", 1, "b1"), "b1")
	}
	e.protect(t, gate.ModeShadow)
	before := e.coverage(t)
	s := e.session(t)
	defer closeSession(t, s, e)
	if err := s.Write(e.Ctx, r, "direct"); err != nil {
		t.Fatalf("a shadow table refused a direct write: %v", err)
	}
	_, err := s.Apply(e.Ctx, Owner, e.Mut(a, 2, "op-b", 2, "b2"), func(ctx context.Context, w Writer) error {
		if err := w.Write(ctx, a, "b2"); err != nil {
			return err
		}
		return w.Write(ctx, r, "cross")
	})
	if err != nil {
		t.Fatalf("a shadow table refused an accept's writes: %v", err)
	}
	c := e.coverage(t)
	if c.Gated != before.Gated+1 || c.Ungated != before.Ungated+2 {
		t.Fatalf("coverage %+v → %+v, want 1 more gated and 2 more ungated", before, c)
	}
	if fx := effects(t, e.Env, e.H, r); !slices.Equal(fx, []string{"b1", "direct", "cross"}) {
		t.Fatalf("effects of %s %q", r, fx)
	}
}
