// Proves Issued.Statement: a status wins over a fresh grant's own held
// statement, the held statement stands when there is no status, and an
// earlier-form grant without a status says nothing.
package wire_test

import (
	"testing"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

func TestIssuedStatement(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	held := &grant.Grant{IssuedAt: t0, ExpiresAt: t0.Add(10 * time.Second), HeldUntil: t0.Add(2 * time.Second)}
	old := &grant.Grant{IssuedAt: t0, ExpiresAt: t0.Add(10 * time.Second)}
	status := &grant.Status{State: grant.StateReleased, IssuedAt: t0.Add(time.Second), ValidUntil: t0.Add(3 * time.Second)}
	for name, c := range map[string]struct {
		is        wire.Issued
		state     grant.State
		at, until time.Time
		ok        bool
	}{
		"status wins":             {wire.Issued{Grant: held, Status: status}, grant.StateReleased, status.IssuedAt, status.ValidUntil, true},
		"held statement":          {wire.Issued{Grant: held}, grant.StateHeld, t0, held.HeldUntil, true},
		"earlier form, no status": {wire.Issued{Grant: old}, "", time.Time{}, time.Time{}, false},
		"nothing":                 {wire.Issued{}, "", time.Time{}, time.Time{}, false},
	} {
		st, at, until, ok := c.is.Statement()
		if st != c.state || !at.Equal(c.at) || !until.Equal(c.until) || ok != c.ok {
			t.Errorf("%s: %s %s %s %v, want %s %s %s %v", name, st, at, until, ok, c.state, c.at, c.until, c.ok)
		}
	}
}
