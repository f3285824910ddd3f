// Proves that every admin call is recorded with the authenticated
// identity and the outcome, refusals included: the registry's own (with
// the value and note), a note with control characters or above
// NoteBytesMax (refused before the registry is asked, and never copied
// into the log), and a caller that is not an admin (refused before its
// body is read); and that every request line names the authenticated
// caller, whatever refused the call.
package httpapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/wire"
)

// lockedBuffer is a bytes.Buffer safe for a server's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// records returns the JSON log lines whose msg is msg.
func (l *lockedBuffer) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		var m map[string]any
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func TestAdminCallsAreAudited(t *testing.T) {
	h := newHarness(t)
	if _, err := h.admin.Floor(bg, wire.FloorRequest{Resource: "inv/9", Fence: 41, Note: "restore of 2026-07-19, INC-7"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.admin.SetPolicy(bg, wire.PolicyRequest{Resource: "inv/9", Generation: 7, Note: "rollout 7"}); err != nil {
		t.Fatal(err)
	}
	_, err := h.admin.SetPolicy(bg, wire.PolicyRequest{Resource: "inv/9", Generation: 3, Note: "lower: refused"})
	wantAPIError(t, err, 400, "INVALID")
	if _, err := h.admin.RevokeEpochs(bg, wire.RevokeEpochsRequest{Below: 1, Note: "noop"}); err != nil {
		t.Fatal(err)
	}
	calls := h.store.calls.Load()
	_, err = h.admin.Floor(bg, wire.FloorRequest{Resource: "inv/9", Fence: 50, Note: "forged\n{\"msg\":\"admin action\"}"})
	wantAPIError(t, err, 400, "INVALID")
	_, err = h.admin.Floor(bg, wire.FloorRequest{Resource: "inv/9", Fence: 50, Note: strings.Repeat("x", NoteBytesMax+1)})
	wantAPIError(t, err, 400, "INVALID")
	if h.store.calls.Load() != calls {
		t.Error("a refused note reached the store")
	}
	_, err = h.alice.Floor(bg, wire.FloorRequest{Resource: "inv/9", Fence: 99, Note: "not an admin"})
	wantAPIError(t, err, 403, "FORBIDDEN")

	recs := h.logs.records(t, "admin action")
	if len(recs) != 7 {
		t.Fatalf("%d audit records, want 7 (floor, policy, refused policy, revoke, two bad notes, the non-admin):\n%v", len(recs), recs)
	}
	first := recs[0]
	for k, want := range map[string]any{"audit": true, "operator": adminID, "action": "raise-floor", "resource": "inv/9",
		"value": float64(41), "note": "restore of 2026-07-19, INC-7", "outcome": "ok"} {
		if first[k] != want {
			t.Errorf("audit record %s = %v, want %v", k, first[k], want)
		}
	}
	if recs[2]["outcome"] != "INVALID" || recs[2]["value"] != float64(3) || recs[2]["note"] != "lower: refused" {
		t.Errorf("a refused call is recorded with its outcome: %v", recs[2])
	}
	for _, bad := range recs[4:6] {
		if bad["operator"] != adminID || bad["outcome"] != "INVALID" || bad["note"] != "" || bad["action"] != "raise-floor" {
			t.Errorf("a refused note: %v, want INVALID without the note", bad)
		}
	}
	if r := recs[6]; r["operator"] != "alice" || r["outcome"] != "FORBIDDEN" || r["action"] != "raise-floor" || r["value"] != float64(0) {
		t.Errorf("the non-admin's call: %v, want operator alice, FORBIDDEN, no values", r)
	}
}

// TestRefusedCallsNameTheirCaller: an authenticated identity's refused
// admin call, or any refused call, is logged with that identity, and an
// admin call it was not allowed to make leaves an audit line.
func TestRefusedCallsNameTheirCaller(t *testing.T) {
	h := newHarness(t)
	_, err := h.bob.Floor(bg, wire.FloorRequest{Resource: "inv/9", Fence: 99, Note: "not mine to raise"})
	wantAPIError(t, err, 403, wire.CodeForbidden)
	_, err = h.bob.RevokeEpochs(bg, wire.RevokeEpochsRequest{Below: 9})
	wantAPIError(t, err, 403, wire.CodeForbidden)
	_, err = h.bob.Resource(bg, "inv/9")
	wantAPIError(t, err, 403, wire.CodeForbidden)
	h.rawAs("POST", "/v1/acquire", tokAlice, "text/plain", `{}`)
	h.raw("POST", "/v1/renew", tokAlice, `{"resource":"inv/9","lease":"l","extra":1}`)
	h.raw("POST", "/v1/admin/floor", "", `{"resource":"inv/9","fence":9}`)

	want := []struct{ path, identity, outcome string }{
		{"/v1/admin/floor", "bob", wire.CodeForbidden},
		{"/v1/admin/revoke-epochs", "bob", wire.CodeForbidden},
		{"/v1/admin/resource", "bob", wire.CodeForbidden},
		{"/v1/acquire", "alice", wire.CodeUnsupportedMediaType},
		{"/v1/renew", "alice", wire.CodeBadRequest},
		{"/v1/admin/floor", "", wire.CodeUnauthenticated},
	}
	lines := h.logs.records(t, "request")
	if len(lines) != len(want) {
		t.Fatalf("%d request lines, want %d:\n%v", len(lines), len(want), lines)
	}
	for i, w := range want {
		if l := lines[i]; l["path"] != w.path || l["identity"] != w.identity || l["outcome"] != w.outcome {
			t.Errorf("request line %d: %v, want path %s identity %q outcome %s", i, l, w.path, w.identity, w.outcome)
		}
	}
	audits := h.logs.records(t, "admin action")
	if len(audits) != 3 {
		t.Fatalf("%d audit lines, want one per refused admin call by bob (the anonymous call names no one):\n%v", len(audits), audits)
	}
	for i, action := range []string{"raise-floor", "revoke-epochs", "read-resource"} {
		if a := audits[i]; a["audit"] != true || a["operator"] != "bob" || a["action"] != action || a["outcome"] != wire.CodeForbidden {
			t.Errorf("audit line %d: %v, want bob's refused %s", i, a, action)
		}
	}
}

// TestFenceRangeBumpIsAudited: a bump is recorded with the generation it
// set, a refused one with the fence it was asked to go above, a
// non-admin's with no values; reading the range is admin-only and not
// audited when it succeeds.
func TestFenceRangeBumpIsAudited(t *testing.T) {
	h := newHarness(t)
	type answer struct {
		fr  wire.FenceRange
		err error
	}
	done := make(chan answer, 1)
	go func() {
		fr, err := h.admin.BumpFenceRange(bg, wire.FenceRangeBumpRequest{Note: "switch to ZooKeeper, CHG-12"})
		done <- answer{fr, err}
	}()
	var got answer
	for waiting := true; waiting; {
		select {
		case got = <-done:
			waiting = false
		case <-time.After(5 * time.Millisecond):
			h.clock.Advance(100 * time.Millisecond) // the bump waits for the clock to pass its second
		}
	}
	want := uint64(time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC).Unix())
	if got.err != nil || got.fr.Generation != want || got.fr.First != want<<32+1 || got.fr.BumpedAt == nil {
		t.Fatalf("bump: %+v %v, want generation %d (the registry clock's second)", got.fr, got.err, want)
	}
	shown, err := h.admin.FenceRange(bg)
	if err != nil || shown.Generation != want || shown.Last != want<<32+1<<32-1 {
		t.Fatalf("read back: %+v %v", shown, err)
	}
	_, err = h.admin.BumpFenceRange(bg, wire.FenceRangeBumpRequest{Above: ^uint64(0), Note: "too far"})
	wantAPIError(t, err, 503, "FENCE_RANGE")
	_, err = h.alice.BumpFenceRange(bg, wire.FenceRangeBumpRequest{Note: "not an admin"})
	wantAPIError(t, err, 403, wire.CodeForbidden)
	_, err = h.alice.FenceRange(bg)
	wantAPIError(t, err, 403, wire.CodeForbidden)

	recs := h.logs.records(t, "admin action")
	if len(recs) != 4 {
		t.Fatalf("%d audit records, want 4 (the bump, the refused bump, alice's two):\n%v", len(recs), recs)
	}
	for i, want := range []map[string]any{
		{"operator": adminID, "action": "bump-fence-range", "value": float64(want), "note": "switch to ZooKeeper, CHG-12", "outcome": "ok"},
		{"operator": adminID, "action": "bump-fence-range", "value": float64(^uint64(0)), "note": "too far", "outcome": "FENCE_RANGE"},
		{"operator": "alice", "action": "bump-fence-range", "value": float64(0), "note": "", "outcome": wire.CodeForbidden},
		{"operator": "alice", "action": "read-fence-range", "outcome": wire.CodeForbidden},
	} {
		for k, v := range want {
			if recs[i][k] != v {
				t.Errorf("audit record %d: %s = %v, want %v (%v)", i, k, recs[i][k], v, recs[i])
			}
		}
	}
}
