// This file proves who may break a lock set's member over HTTP: an
// identity the policy grants break on that member only is refused
// (FORBIDDEN_RESOURCE naming another member) and nothing is ended, since
// the break would end the whole set; with break on every member it ends
// the set, and the answer names both members' leases.
package httpapi

import (
	"net/http"
	"testing"

	"github.com/fencegate/fencegate/wire"
)

func TestBreakSetMemberNeedsTheRightOnEveryMember(t *testing.T) {
	h := newHarness(t)
	var set wire.IssuedSetResponse
	if st, eb := h.post(tokAlice, "/v1/lockset/acquire", setRequest("s-brk", "alice-only/x", "inv/1"), &set); st != http.StatusOK {
		t.Fatalf("acquire: %d %+v", st, eb)
	}
	writePolicy(t, h, harnessPolicy[:len(harnessPolicy)-2]+`,
  {"identities": ["bob"], "resources": ["inv/*"], "verbs": ["break"]}]}`)
	var out wire.BreakResponse
	st, eb := h.post(tokBob, "/v1/break", wire.BreakRequest{Resource: "inv/1", Note: "test"}, &out)
	if st != http.StatusForbidden || eb.Code != "FORBIDDEN_RESOURCE" {
		t.Fatalf("bob (break on inv/* only) broke a set with a member in alice-only/: %d %+v", st, eb)
	}
	for _, m := range []string{"alice-only/x", "inv/1"} {
		if ls, err := h.reg.LockStatus(t.Context(), m); err != nil || ls.Holder == nil || ls.Holder.Owner != "alice" {
			t.Fatalf("%s after a refused break: %+v %v, want alice's still", m, ls.Holder, err)
		}
	}
	writePolicy(t, h, harnessPolicy[:len(harnessPolicy)-2]+`,
  {"identities": ["bob"], "resources": ["inv/*", "alice-only/*"], "verbs": ["break"]}]}`)
	if st, eb := h.post(tokBob, "/v1/break", wire.BreakRequest{Resource: "inv/1", Note: "test"}, &out); st != http.StatusOK {
		t.Fatalf("bob with break on every member: %d %+v", st, eb)
	}
	if len(out.Ended) != 2 || out.Ended[0].Resource != "alice-only/x" || out.Ended[1].Resource != "inv/1" || out.Broken == nil || out.Broken.Lease != out.Ended[1].Holder.Lease {
		t.Fatalf("the answer: %+v, want both members ended, inv/1's as broken", out)
	}
}

// Readers are broken with their lock's rights, as they are acquired: a
// rule granting break on NAME alone lets its holder break NAME/_read.
func TestBreakReadersWithTheLocksRight(t *testing.T) {
	h := newHarness(t)
	var is wire.IssuedResponse
	read := wire.AcquireRequest{Resource: "inv/doc", Mode: wire.ModeRead, OperationID: "op", OperationClass: "settle", RequestID: "r-1", TTLMs: 30_000}
	if st, eb := h.post(tokAlice, "/v1/acquire", read, &is); st != http.StatusOK {
		t.Fatalf("read acquire: %d %+v", st, eb)
	}
	writePolicy(t, h, harnessPolicy[:len(harnessPolicy)-2]+`,
  {"identities": ["bob"], "resources": ["inv/doc"], "verbs": ["break"]}]}`)
	var out wire.BreakResponse
	if st, eb := h.post(tokBob, "/v1/break", wire.BreakRequest{Resource: "inv/doc/_read", Note: "test"}, &out); st != http.StatusOK || len(out.Ended) != 1 {
		t.Fatalf("bob (break on inv/doc) breaking its readers: %d %+v %+v", st, eb, out)
	}
}
