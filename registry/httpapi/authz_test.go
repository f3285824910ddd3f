// Proves the resource policy is enforced on every call that names a
// resource: an identity outside it cannot acquire, renew, release or ask
// the status of a grant of that resource (403 FORBIDDEN_RESOURCE naming
// the identity, verb and resource, before the store is touched, each
// refusal audited), while admin calls stay the admin role's; and that a
// policy reloaded without a restart (asked to, or noticing the file
// changed) takes effect on the next call, so a holder whose resource was
// taken away can no longer renew its lease or recover its grant, while a
// bad edit keeps the policy in force and is logged with why.
package httpapi

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/wire"
)

// wantForbidden checks err is the policy's refusal of identity doing verb
// to resource.
func wantForbidden(t *testing.T, err error, identity string, verb Verb, resource string) {
	t.Helper()
	wantAPIError(t, err, 403, wire.CodeForbiddenResource)
	if err != nil && !strings.Contains(err.Error(), identity+" may not "+string(verb)+" "+resource) {
		t.Errorf("refusal %q does not name %s, %s and %s", err, identity, verb, resource)
	}
}

func TestResourcePolicyScopesEveryCall(t *testing.T) {
	h := newHarness(t)
	const res = "alice-only/batch-1"
	before := h.store.calls.Load()
	_, err := h.bob.Acquire(bg, acq(res, "r-b1"))
	wantForbidden(t, err, "bob", VerbAcquire, res)
	if n := h.store.calls.Load() - before; n != 0 {
		t.Errorf("a refused acquire made %d store calls", n)
	}
	a, err := h.alice.Acquire(bg, acq(res, "r-a1"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.bob.Renew(bg, res, a.Grant.Lease)
	wantForbidden(t, err, "bob", VerbAcquire, res)
	err = h.bob.Release(bg, res, a.Grant.Lease)
	wantForbidden(t, err, "bob", VerbAcquire, res)
	_, err = h.bob.Status(bg, a.Grant)
	wantForbidden(t, err, "bob", VerbSee, res)
	if _, err := h.alice.Status(bg, a.Grant); err != nil {
		t.Errorf("alice's status of her own grant: %v", err)
	}
	if _, err := h.admin.Floor(bg, wire.FloorRequest{Resource: res, Fence: 5, Note: "admins are not scoped"}); err != nil {
		t.Errorf("an admin's floor raise on a resource outside its policy: %v", err)
	}
	audits := h.logs.records(t, "access refused")
	if len(audits) != 4 {
		t.Fatalf("%d access-refused lines, want 4:\n%v", len(audits), audits)
	}
	for i, want := range []struct{ path, verb string }{{"/v1/acquire", "acquire"}, {"/v1/renew", "acquire"}, {"/v1/release", "acquire"}, {"/v1/status", "see"}} {
		if l := audits[i]; l["audit"] != true || l["identity"] != "bob" || l["verb"] != want.verb || l["resource"] != res ||
			l["path"] != want.path || l["outcome"] != wire.CodeForbiddenResource || l["via"] != "api" {
			t.Errorf("access-refused line %d: %v", i, l)
		}
	}

	// The policy takes alice-only/ away from alice: her next renewal, her
	// request ID and her release are refused, without a restart.
	writePolicy(t, h, `{"schema": "resourcePolicy.v1", "rules": [{"identities": ["alice", "bob"], "resources": ["inv/*"], "verbs": ["acquire", "see"]}]}`)
	_, err = h.alice.Renew(bg, res, a.Grant.Lease)
	wantForbidden(t, err, "alice", VerbAcquire, res)
	_, err = h.alice.QueryRequest(bg, "r-a1")
	wantForbidden(t, err, "alice", VerbAcquire, res)
	// A bad edit changes nothing: alice stays refused, bob keeps inv/.
	writePolicy(t, h, `{"schema": "resourcePolicy.v1", "rules": [{"identities": ["*"], "resources": ["*"], "verbs": ["acquire", "see"]}], "x": 1}`)
	_, err = h.alice.Renew(bg, res, a.Grant.Lease)
	wantForbidden(t, err, "alice", VerbAcquire, res)
	if _, err := h.bob.Acquire(bg, acq("inv/7", "r-b7")); err != nil {
		t.Errorf("bob on inv/ after a bad edit: %v", err)
	}
}

// writePolicy replaces the harness's policy file and reloads it as
// serve's watcher would; a bad file is kept out.
func writePolicy(t *testing.T, h *harness, policy string) {
	t.Helper()
	if err := os.WriteFile(h.policyPath, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _ = h.policy.Reload()
}

func TestPolicyWatchReloadsAndSaysWhy(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	hup := make(chan os.Signal, 1)
	done := make(chan struct{})
	go func() { h.policy.Watch(ctx, 3_600_000, hup, h.server.cfg.Logger); close(done) }()
	wait := func(msg string, n int) []map[string]any {
		t.Helper()
		for range 200 {
			if recs := h.logs.records(t, msg); len(recs) >= n {
				return recs
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("no %d %q lines:\n%s", n, msg, h.logs.b.String())
		return nil
	}
	if err := os.WriteFile(h.policyPath, []byte(`{"schema":"resourcePolicy.v1","rules":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	kept := h.policy.Policy().Digest()
	hup <- os.Interrupt // any signal: serve sends SIGHUP
	bad := wait("resource policy not reloaded: keeping the policy in force", 1)[0]
	if bad["level"] != "ERROR" || bad["kept"] != kept || !strings.Contains(bad["error"].(string), "0 rules") {
		t.Errorf("the refusal line: %v", bad)
	}
	if err := os.WriteFile(h.policyPath, []byte(policyOf(`{"identities":["bob"],"resources":["*"],"verbs":["acquire"]}`)), 0o600); err != nil {
		t.Fatal(err)
	}
	hup <- os.Interrupt
	ok := wait("resource policy loaded", 1)[0]
	if ok["digest"] != h.policy.Policy().Digest() || ok["rules"] != float64(1) || ok["digest"] == kept {
		t.Errorf("the loaded line: %v", ok)
	}
	if h.policy.Authorize("bob", VerbAcquire, "anything/1") != nil {
		t.Error("the reloaded policy is not in force")
	}
	cancel()
	<-done

	// Polling alone notices a change of the file.
	ctx, cancel = context.WithCancel(bg)
	defer cancel()
	go h.policy.Watch(ctx, 20, nil, h.server.cfg.Logger)
	if err := os.WriteFile(h.policyPath, []byte(policyOf(`{"identities":["carol"],"resources":["*"],"verbs":["see"]}`)), 0o600); err != nil {
		t.Fatal(err)
	}
	wait("resource policy loaded", 2)
	if h.policy.Authorize("carol", VerbSee, "anything/1") != nil {
		t.Error("the polled policy is not in force")
	}
}
