// Fuzzes the resource policy's parser (seeds committed in
// testdata/fuzz/FuzzParsePolicy: a genuine policy and named near-misses):
// it never panics and refuses only with ErrBadPolicy; it accepts no field
// given twice or in another letter case (an independent key walker,
// testkit/jsonkeys); and what it accepts decides exactly as a reference
// reading of the same file does, for probes made from its own patterns
// (so no call is allowed that no rule names, and no SPIFFE identity is
// let in by a pattern of another trust domain), and the same after a
// round trip through its JSON form.
package httpapi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/testkit/jsonkeys"
)

// policyNames are every JSON name the policy format has, at any depth.
var policyNames = map[string]bool{"schema": true, "rules": true, "note": true, "identities": true, "resources": true, "verbs": true}

func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(policyOf(`{"identities":["alice","team-*","spiffe://example.org/billing/*"],"resources":["inv/*","one"],"verbs":["acquire","see"]}`)))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePolicy(b)
		if err != nil {
			if !errors.Is(err, ErrBadPolicy) {
				t.Fatalf("refusal %v does not wrap ErrBadPolicy", err)
			}
			return
		}
		if problem := jsonkeys.Problem(b, policyNames); problem != "" {
			t.Fatalf("accepted a repeated or inexact %s:\n%s", problem, b)
		}
		var raw policyFile
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", b, err)
		}
		again, err := json.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		p2, err := ParsePolicy(again)
		if err != nil {
			t.Fatalf("the re-encoding %s of an accepted policy is refused: %v", again, err)
		}
		ids, res := probes(raw)
		for _, id := range ids {
			for _, r := range res {
				for _, v := range Verbs {
					want := referenceAllows(raw, id, v, r)
					if got := p.Authorize(id, v, r) == nil; got != want {
						t.Fatalf("%s %s %s: policy says %v, the file's rules say %v:\n%s", id, v, r, got, want, b)
					}
					if got := p2.Authorize(id, v, r) == nil; got != want {
						t.Fatalf("%s %s %s: after a round trip the policy says %v:\n%s", id, v, r, got, again)
					}
				}
			}
		}
	})
}

// probes are identities and resources to ask about: each pattern of the
// file as a name, each prefix with something after it, and names of
// another trust domain and of no rule.
func probes(raw policyFile) (ids, res []string) {
	ids = []string{"nobody", "spiffe://elsewhere.org/x", "spiffe://example.org/x"}
	res = []string{"nothing/here"}
	for _, r := range raw.Rules {
		for _, p := range r.Identities {
			s := strings.TrimSuffix(p, "*")
			ids = append(ids, s, s+"x", s+"x/y", s+".evil/x", strings.TrimSuffix(s, "/")+"x/y")
		}
		for _, p := range r.Resources {
			s := strings.TrimSuffix(p, "*")
			res = append(res, s, s+"x", s+"x/y", strings.TrimSuffix(s, "/")+"x/y")
		}
	}
	return ids, res
}

// referenceAllows reads the file's rules as ParsePolicy's documentation
// says, independently of its code: a rule allows when it names the verb,
// an identity pattern matches (exactly, "*", or a prefix glob that, for a
// plain name, never matches a SPIFFE ID) and a resource pattern matches.
func referenceAllows(raw policyFile, id string, verb Verb, resource string) bool {
	matches := func(p, v string, identity bool) bool {
		if p == "*" {
			return true
		}
		prefix, glob := strings.CutSuffix(p, "*")
		if !glob {
			return p == v
		}
		if identity && !strings.HasPrefix(prefix, "spiffe://") && strings.HasPrefix(v, "spiffe://") {
			return false
		}
		return strings.HasPrefix(v, prefix)
	}
	for _, r := range raw.Rules {
		verbOK, idOK, resOK := false, false, false
		for _, v := range r.Verbs {
			verbOK = verbOK || v == verb
		}
		for _, p := range r.Identities {
			idOK = idOK || matches(p, id, true)
		}
		for _, p := range r.Resources {
			resOK = resOK || matches(p, resource, false)
		}
		if verbOK && idOK && resOK {
			return true
		}
	}
	return false
}

// TestPolicyFuzzCheckCanFail shows the property check catching a policy
// that lets a plain-name prefix into SPIFFE IDs: the reference refuses
// what such a matcher would allow.
func TestPolicyFuzzCheckCanFail(t *testing.T) {
	raw := policyFile{Schema: SchemaPolicy, Rules: []ruleFile{{Identities: []string{"s*"}, Resources: []string{"*"}, Verbs: []Verb{VerbSee}}}}
	broken := pattern{s: "s", prefix: true} // plain: false, as a careless compiler would leave it
	if !broken.match("spiffe://example.org/x") || referenceAllows(raw, "spiffe://example.org/x", VerbSee, "r") {
		t.Fatal("the reference does not tell a careless plain prefix from the documented one")
	}
}
