// Proves that every admin call the registry decides is recorded with the
// authenticated admin identity, the value, the operator's note and the
// outcome (refusals too), and that a note with control characters or
// above NoteBytesMax is refused before the registry is asked.
package httpapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
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
	if _, err := h.admin.Floor(bg, FloorRequest{Resource: "inv/9", Fence: 41, Note: "restore of 2026-07-19, INC-7"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.admin.SetPolicy(bg, PolicyRequest{Resource: "inv/9", Generation: 7, Note: "rollout 7"}); err != nil {
		t.Fatal(err)
	}
	_, err := h.admin.SetPolicy(bg, PolicyRequest{Resource: "inv/9", Generation: 3, Note: "lower: refused"})
	wantAPIError(t, err, 400, "INVALID")
	if _, err := h.admin.RevokeEpochs(bg, RevokeEpochsRequest{Below: 1, Note: "noop"}); err != nil {
		t.Fatal(err)
	}
	calls := h.store.calls.Load()
	_, err = h.admin.Floor(bg, FloorRequest{Resource: "inv/9", Fence: 50, Note: "forged\n{\"msg\":\"admin action\"}"})
	wantAPIError(t, err, 400, "INVALID")
	_, err = h.admin.Floor(bg, FloorRequest{Resource: "inv/9", Fence: 50, Note: strings.Repeat("x", NoteBytesMax+1)})
	wantAPIError(t, err, 400, "INVALID")
	if h.store.calls.Load() != calls {
		t.Error("a refused note reached the store")
	}
	_, err = h.alice.Floor(bg, FloorRequest{Resource: "inv/9", Fence: 99, Note: "not an admin"})
	wantAPIError(t, err, 403, "FORBIDDEN")

	recs := h.logs.records(t, "admin action")
	if len(recs) != 4 {
		t.Fatalf("%d audit records, want 4 (floor, policy, refused policy, revoke; bad notes and the non-admin never reach the registry):\n%v", len(recs), recs)
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
}
