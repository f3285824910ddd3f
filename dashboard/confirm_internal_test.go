// Proves the confirmation token binds the admin, the action, its values
// and its own random nonce, and expires after ConfirmTTLMs; and that the charts are drawn
// from the numbers they are given (quantiles are bucket upper bounds).
package dashboard

import (
	"math"
	"strings"
	"testing"
)

func TestConfirmationTokenBinds(t *testing.T) {
	d := &Dashboard{tokenKey: []byte("0123456789abcdef0123456789abcdef")}
	q := request{Kind: KindResume, Gate: "gate-1", Resource: "r/1", Value: 3, Note: "INC-42"}
	const now = 1_000_000
	tok := d.token("ops-admin", q, now+ConfirmTTLMs)
	if _, err := d.checkToken(tok, "ops-admin", q, now); err != nil {
		t.Fatalf("own token: %v", err)
	}
	other := func(edit func(*request)) request { c := q; edit(&c); return c }
	for name, c := range map[string]struct {
		tok, admin string
		q          request
		nowMs      int64
	}{
		"another admin":  {tok, "ops-admin-2", q, now},
		"another floor":  {tok, "ops-admin", other(func(r *request) { r.Value = 4 }), now},
		"another gate":   {tok, "ops-admin", other(func(r *request) { r.Gate = "gate-2" }), now},
		"another lease":  {tok, "ops-admin", other(func(r *request) { r.Lease = "l9-other" }), now},
		"another note":   {tok, "ops-admin", other(func(r *request) { r.Note = "INC-43" }), now},
		"another kind":   {tok, "ops-admin", other(func(r *request) { r.Kind = KindFloor }), now},
		"expired":        {tok, "ops-admin", q, now + ConfirmTTLMs + 1},
		"too long-lived": {d.token("ops-admin", q, now+2*ConfirmTTLMs), "ops-admin", q, now},
		"garbage":        {"12.abc", "ops-admin", q, now},
		"another nonce":  {withNonce(tok, "AAAAAAAAAAAAAAAA"), "ops-admin", q, now},
		"no nonce":       {withNonce(tok, ""), "ops-admin", q, now},
	} {
		if _, err := d.checkToken(c.tok, c.admin, c.q, c.nowMs); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// withNonce is tok with its nonce replaced.
func withNonce(tok, nonce string) string {
	p := strings.Split(tok, ".")
	p[1] = nonce
	return strings.Join(p, ".")
}

func TestChartsFromNumbers(t *testing.T) {
	bs := []Bucket{{0.001, 3}, {0.002, 1}, {math.Inf(1), 1}}
	if p50, p99 := quantile(bs, 0.5), quantile(bs, 0.99); p50 != 0.001 || !math.IsInf(p99, 1) {
		t.Errorf("p50 %g p99 %g", p50, p99)
	}
	if q := quantile(nil, 0.5); q != 0 {
		t.Errorf("quantile of nothing: %g", q)
	}
	svg := string(histogramSVG(bs))
	if n := strings.Count(svg, `<rect class="bar"`); n != 3 || !strings.Contains(svg, "<title>≤ 1ms: 3</title>") {
		t.Errorf("%d bars:\n%s", n, svg)
	}
	for v, want := range map[float64]float64{0: 1, 1: 1, 1.2: 2, 3: 5, 7: 10, 11: 20, 450: 500} {
		if got := niceCeil(v); got != want {
			t.Errorf("niceCeil(%g) = %g, want %g", v, got, want)
		}
	}
	for s, want := range map[float64]string{0.001: "1ms", 0.256: "256ms", 4.096: "4.1s", math.Inf(1): "+Inf"} {
		if got := seconds(s); got != want {
			t.Errorf("seconds(%g) = %q, want %q", s, got, want)
		}
	}
}
