// Proves the resource policy's format and meaning: a policy parses only
// when every rule, pattern and verb is one the format allows (unknown or
// repeated fields, a '*' inside a pattern, a SPIFFE prefix that could
// cross a trust domain, an empty policy are refused, each error naming
// its rule); a call is allowed only when one rule matches its identity,
// its resource and its verb; a plain-name prefix never matches a SPIFFE
// ID; and a PolicyFile keeps its policy through a bad edit and takes a
// good one.
package httpapi

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func policyOf(rules string) string { return `{"schema":"resourcePolicy.v1","rules":[` + rules + `]}` }

func TestParsePolicyRefuses(t *testing.T) {
	rule := func(ids, res, verbs string) string {
		return `{"identities":[` + ids + `],"resources":[` + res + `],"verbs":[` + verbs + `]}`
	}
	ok := rule(`"alice"`, `"inv/*"`, `"acquire"`)
	for _, c := range []struct{ name, file, want string }{
		{"not JSON", `{`, "bad resource policy"},
		{"unknown field", `{"schema":"resourcePolicy.v1","rules":[` + ok + `],"deny":[]}`, `unknown field "deny"`},
		{"unknown rule field", policyOf(`{"identities":["a"],"resources":["r"],"verbs":["see"],"effect":"deny"}`), `unknown field "effect"`},
		{"field twice", policyOf(`{"identities":["a"],"identities":["b"],"resources":["r"],"verbs":["see"]}`), "given twice"},
		{"case variant", policyOf(`{"Identities":["a"],"resources":["r"],"verbs":["see"]}`), `unknown field "Identities"`},
		{"trailing", policyOf(ok) + `{}`, "trailing"},
		{"wrong schema", `{"schema":"resourcePolicy.v2","rules":[` + ok + `]}`, `schema "resourcePolicy.v2"`},
		{"no rules", policyOf(``), "0 rules"},
		{"no identities", policyOf(rule(``, `"r"`, `"see"`)), "rule 1: identities: 0 patterns"},
		{"no resources", policyOf(ok + `,` + rule(`"a"`, ``, `"see"`)), "rule 2: resources: 0 patterns"},
		{"no verbs", policyOf(rule(`"a"`, `"r"`, ``)), "verbs: name at least one"},
		{"unknown verb", policyOf(rule(`"a"`, `"r"`, `"write"`)), `unknown verb "write"`},
		{"verb twice", policyOf(rule(`"a"`, `"r"`, `"see","see"`)), `"see" given twice`},
		{"pattern twice", policyOf(rule(`"a","a"`, `"r"`, `"see"`)), `"a" given twice`},
		{"star inside", policyOf(rule(`"a"`, `"inv/*/x"`, `"see"`)), "may only end a pattern"},
		{"two stars", policyOf(rule(`"a**"`, `"r"`, `"see"`)), "may only end a pattern"},
		{"bad identity", policyOf(rule(`"Alice/x"`, `"r"`, `"see"`)), `"Alice/x"`},
		{"bad resource", policyOf(rule(`"a"`, `"Inv/1"`, `"see"`)), "upper-case"},
		{"bad resource prefix", policyOf(rule(`"a"`, `"inv//*"`, `"see"`)), "not the start of a valid resource"},
		{"spiffe prefix into the domain name", policyOf(rule(`"spiffe://example.org*"`, `"r"`, `"see"`)), "must follow a '/'"},
		{"spiffe prefix mid-segment", policyOf(rule(`"spiffe://example.org/bill*"`, `"r"`, `"see"`)), "must follow a '/'"},
		{"spiffe scheme only", policyOf(rule(`"spiffe://*"`, `"r"`, `"see"`)), "must follow a '/'"},
		{"plain prefix not a name", policyOf(rule(`"-x*"`, `"r"`, `"see"`)), "not the start of a valid identity"},
		{"note with newline", policyOf(`{"note":"a\nb","identities":["a"],"resources":["r"],"verbs":["see"]}`), "note: byte 1"},
		{"null list", policyOf(`{"identities":null,"resources":["r"],"verbs":["see"]}`), "identities: 0 patterns"},
		{"too large", `{"schema":"` + strings.Repeat("x", PolicyFileBytesMax) + `"}`, "limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePolicy([]byte(c.file))
			if !errors.Is(err, ErrBadPolicy) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrBadPolicy containing %q", err, c.want)
			}
		})
	}
}

func TestPolicyDecides(t *testing.T) {
	p, err := ParsePolicy([]byte(policyOf(`
	  {"note":"billing", "identities":["spiffe://example.org/billing/*","billing-cron"], "resources":["invoice-batch/*"], "verbs":["acquire","see"]},
	  {"identities":["team-*"], "resources":["shared/one"], "verbs":["acquire"]},
	  {"identities":["ops-viewer","spiffe://example.org/ops/*"], "resources":["*"], "verbs":["see"]},
	  {"identities":["*"], "resources":["public/*"], "verbs":["see"]}`)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id       string
		verb     Verb
		resource string
		allowed  bool
	}{
		{"spiffe://example.org/billing/settle-7", VerbAcquire, "invoice-batch/2026-07-19", true},
		{"spiffe://example.org/billing/eu/settle-7", VerbSee, "invoice-batch/x", true},
		{"billing-cron", VerbAcquire, "invoice-batch/2026-07-19", true},
		{"spiffe://example.org/billing/settle-7", VerbBreak, "invoice-batch/2026-07-19", false}, // no rule gives break
		{"spiffe://example.org/billing/settle-7", VerbAcquire, "invoice-batch-2/x", false},      // the prefix ends at '/'
		{"spiffe://example.org/billing/settle-7", VerbAcquire, "payroll/x", false},
		{"spiffe://example.org/billing-evil/x", VerbAcquire, "invoice-batch/x", false}, // another path segment
		{"spiffe://example.org.evil/billing/x", VerbAcquire, "invoice-batch/x", false}, // another trust domain
		{"spiffe://other.org/billing/settle-7", VerbAcquire, "invoice-batch/x", false}, // another trust domain
		{"billing-cron-2", VerbAcquire, "invoice-batch/x", false},                      // exact means exact
		{"team-a", VerbAcquire, "shared/one", true},                                    // a plain prefix
		{"team-a", VerbSee, "shared/one", false},                                       // acquire does not imply see
		{"team-a", VerbAcquire, "shared/one/two", false},                               // an exact resource
		{"spiffe://example.org/team-a", VerbAcquire, "shared/one", false},              // a plain prefix is never a SPIFFE ID
		{"ops-viewer", VerbSee, "anything/at/all", true},
		{"ops-viewer", VerbAcquire, "anything/at/all", false},
		{"spiffe://example.org/ops/oncall", VerbSee, "invoice-batch/x", true},
		{"somebody", VerbSee, "public/board", true},
		{"somebody", VerbAcquire, "public/board", false},
	} {
		err := p.Authorize(c.id, c.verb, c.resource)
		if (err == nil) != c.allowed {
			t.Errorf("%s %s %s: %v, want allowed=%v", c.id, c.verb, c.resource, err, c.allowed)
		}
		var fe *ForbiddenError
		if err != nil && (!errors.As(err, &fe) || !errors.Is(err, ErrForbiddenResource) || fe.Identity != c.id || fe.Verb != c.verb || fe.Resource != c.resource ||
			!strings.Contains(err.Error(), c.id+" may not "+string(c.verb)+" "+c.resource)) {
			t.Errorf("%s %s %s: refusal %v does not name who, what and which resource", c.id, c.verb, c.resource, err)
		}
	}
	if p.Rules() != 4 || !strings.HasPrefix(p.Digest(), "sha256:") {
		t.Errorf("rules %d, digest %q", p.Rules(), p.Digest())
	}
}

func TestPolicyFileKeepsItsPolicyThroughABadEdit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(policyOf(`{"identities":["alice"],"resources":["inv/*"],"verbs":["acquire"]}`))
	f, err := LoadPolicyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first := f.Policy().Digest()
	if changed, err := f.Reload(); changed || err != nil {
		t.Errorf("reload of the same bytes: changed %v, %v", changed, err)
	}
	write(`{"schema":"resourcePolicy.v1","rules":[{"identities":["alice"],"resources":["inv/*"],"verbs":["acquire","steal"]}]}`)
	if changed, err := f.Reload(); changed || !errors.Is(err, ErrBadPolicy) || !strings.Contains(err.Error(), path) {
		t.Errorf("a bad edit: changed %v, %v; want ErrBadPolicy naming the file", changed, err)
	}
	if f.Policy().Digest() != first || f.Authorize("alice", VerbAcquire, "inv/1") != nil {
		t.Error("a bad edit changed the policy in force")
	}
	write(policyOf(`{"identities":["bob"],"resources":["inv/*"],"verbs":["acquire"]}`))
	if changed, err := f.Reload(); !changed || err != nil {
		t.Fatalf("a good edit: changed %v, %v", changed, err)
	}
	if f.Authorize("alice", VerbAcquire, "inv/1") == nil || f.Authorize("bob", VerbAcquire, "inv/1") != nil {
		t.Error("the good edit is not in force")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Reload(); err == nil || f.Authorize("bob", VerbAcquire, "inv/1") != nil {
		t.Errorf("a removed file: %v; the policy in force must stay", err)
	}
	if _, err := LoadPolicyFile(path); err == nil {
		t.Error("loading a missing file succeeded")
	}
}
