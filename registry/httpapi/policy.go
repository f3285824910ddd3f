package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/strictjson"
)

// SchemaPolicy names the resource policy's file format.
const SchemaPolicy = "resourcePolicy.v1"

// Resource policy limits.
const (
	// PolicyFileBytesMax bounds a policy file, 1 MiB.
	PolicyFileBytesMax = 1 << 20
	// PolicyRulesMax bounds the rules of one policy, 1024: every call
	// walks them, so a policy stays a table a person can read.
	PolicyRulesMax = 1024
	// PolicyPatternsPerRuleMax bounds a rule's identity patterns and its
	// resource patterns, 256 each.
	PolicyPatternsPerRuleMax = 256
	// PolicyNoteBytesMax bounds a rule's note, 256 bytes.
	PolicyNoteBytesMax = 256
)

// ErrBadPolicy: a resource policy that does not parse or breaks a rule of
// the format. Every ParsePolicy error wraps it.
var ErrBadPolicy = errors.New("httpapi: bad resource policy")

// Policy is a parsed resource policy: rules that each let some identities
// do some verbs to some resources. Anything no rule allows is refused.
// There are no deny rules, so the order of rules does not matter. A Policy
// is immutable and safe for concurrent use.
type Policy struct {
	rules []rule
	sum   [sha256.Size]byte // of the file's bytes
}

// rule is one allow rule, compiled.
type rule struct {
	identities, resources []pattern
	verbs                 []Verb
}

// pattern matches a name exactly, or every name with a given prefix;
// a plain-name prefix never matches a SPIFFE ID.
type pattern struct {
	s      string
	prefix bool
	plain  bool // a plain-name identity prefix
}

func (p pattern) match(v string) bool {
	switch {
	case !p.prefix:
		return v == p.s
	case p.plain && strings.HasPrefix(v, spiffeScheme):
		return false
	}
	return strings.HasPrefix(v, p.s)
}

const spiffeScheme = "spiffe://"

// policyFile and ruleFile are the JSON form; see ParsePolicy.
type policyFile struct {
	Schema string     `json:"schema"`
	Rules  []ruleFile `json:"rules"`
}

type ruleFile struct {
	Note       string   `json:"note,omitempty"`
	Identities []string `json:"identities"`
	Resources  []string `json:"resources"`
	Verbs      []Verb   `json:"verbs"`
}

// ParsePolicy parses a resource policy, a JSON object decoded strictly
// (no unknown field, no field given twice or in another letter case, no
// trailing data; at most PolicyFileBytesMax bytes):
//
//	{"schema": "resourcePolicy.v1", "rules": [
//	  {"note": "billing's workers lock billing's batches",
//	   "identities": ["spiffe://example.org/billing/*", "billing-cron"],
//	   "resources": ["invoice-batch/*"],
//	   "verbs": ["acquire", "see"]}]}
//
// An identity matches a rule when it matches one of the rule's identity
// patterns, likewise a resource; a call is allowed when one rule matches
// its identity, its resource and its verb. Patterns:
//
//   - "*" matches everything;
//   - a pattern without '*' matches exactly that name (a valid workload
//     identity, grant.ValidateOwner, or resource, grant.ValidateResource);
//   - a pattern ending in '*' (its only '*') matches every name that
//     starts with the rest, a prefix of a valid name. A resource prefix
//     is a plain string prefix: end it with '/' to stop at a segment
//     ("invoice-batch/*" does not match "invoice-batch-2/x"). A SPIFFE
//     prefix must end with '/' ("spiffe://example.org/*" is the trust
//     domain, "spiffe://example.org/billing/*" one path below it), so it
//     never reaches into another trust domain or a longer path segment;
//     a plain-name prefix ("billing-*", even "s*") never matches a SPIFFE
//     ID.
//
// Verbs are "acquire", "see" and "break" (Verbs). There must be at least
// one rule and at most PolicyRulesMax; each rule names at least one
// identity pattern, resource pattern and verb, none twice, at most
// PolicyPatternsPerRuleMax patterns of each kind; its note is optional,
// printable ASCII, at most PolicyNoteBytesMax bytes. Errors wrap
// ErrBadPolicy and say which rule and which pattern.
func ParsePolicy(b []byte) (*Policy, error) {
	if len(b) > PolicyFileBytesMax {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrBadPolicy, len(b), PolicyFileBytesMax)
	}
	var f policyFile
	if err := strictjson.Decode(b, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadPolicy, err)
	}
	if f.Schema != SchemaPolicy {
		return nil, fmt.Errorf("%w: schema %q, want %q", ErrBadPolicy, f.Schema, SchemaPolicy)
	}
	if len(f.Rules) == 0 || len(f.Rules) > PolicyRulesMax {
		return nil, fmt.Errorf("%w: %d rules, want 1 to %d (a policy without rules would refuse everyone)", ErrBadPolicy, len(f.Rules), PolicyRulesMax)
	}
	p := &Policy{sum: sha256.Sum256(b)}
	for i, rf := range f.Rules {
		r, err := compileRule(rf)
		if err != nil {
			return nil, fmt.Errorf("%w: rule %d: %v", ErrBadPolicy, i+1, err)
		}
		p.rules = append(p.rules, r)
	}
	return p, nil
}

func compileRule(rf ruleFile) (rule, error) {
	if err := checkPolicyNote(rf.Note); err != nil {
		return rule{}, err
	}
	var r rule
	var err error
	if r.identities, err = compilePatterns("identities", rf.Identities, identityPattern); err != nil {
		return rule{}, err
	}
	if r.resources, err = compilePatterns("resources", rf.Resources, resourcePattern); err != nil {
		return rule{}, err
	}
	if len(rf.Verbs) == 0 {
		return rule{}, errors.New("verbs: name at least one of acquire, see, break")
	}
	for _, v := range rf.Verbs {
		if !slices.Contains(Verbs, v) {
			return rule{}, fmt.Errorf("verbs: unknown verb %q (want acquire, see or break)", v)
		}
		if slices.Contains(r.verbs, v) {
			return rule{}, fmt.Errorf("verbs: %q given twice", v)
		}
		r.verbs = append(r.verbs, v)
	}
	return r, nil
}

func checkPolicyNote(note string) error {
	if len(note) > PolicyNoteBytesMax {
		return fmt.Errorf("note: %d bytes, at most %d", len(note), PolicyNoteBytesMax)
	}
	for i := 0; i < len(note); i++ {
		if c := note[i]; c < ' ' || c > '~' {
			return fmt.Errorf("note: byte %d is not printable ASCII", i)
		}
	}
	return nil
}

// compilePatterns checks and compiles one list of a rule.
func compilePatterns(what string, list []string, one func(string) (pattern, error)) ([]pattern, error) {
	if len(list) == 0 || len(list) > PolicyPatternsPerRuleMax {
		return nil, fmt.Errorf("%s: %d patterns, want 1 to %d", what, len(list), PolicyPatternsPerRuleMax)
	}
	out := make([]pattern, 0, len(list))
	for i, s := range list {
		if slices.Contains(list[:i], s) {
			return nil, fmt.Errorf("%s: %q given twice", what, s)
		}
		p, err := one(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %v", what, s, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// identityPattern compiles an identity pattern; see ParsePolicy.
func identityPattern(s string) (pattern, error) {
	prefix, glob, err := splitGlob(s)
	if err != nil || !glob {
		return pattern{s: s}, errOr(err, grant.ValidateOwner(s))
	}
	if prefix == "" {
		return pattern{prefix: true}, nil
	}
	rest, spiffe := strings.CutPrefix(prefix, spiffeScheme)
	if spiffe && (!strings.HasSuffix(rest, "/") || strings.Index(rest, "/") < 1) {
		return pattern{}, errors.New("a SPIFFE pattern's '*' must follow a '/' after the trust domain (spiffe://example.org/* or spiffe://example.org/team/*)")
	}
	if err := grant.ValidateOwner(prefix + "x"); err != nil {
		return pattern{}, fmt.Errorf("not the start of a valid identity: %v", err)
	}
	return pattern{s: prefix, prefix: true, plain: !spiffe}, nil
}

// resourcePattern compiles a resource pattern; see ParsePolicy.
func resourcePattern(s string) (pattern, error) {
	prefix, glob, err := splitGlob(s)
	if err != nil || !glob {
		return pattern{s: s}, errOr(err, grant.ValidateResource(s))
	}
	if prefix == "" {
		return pattern{prefix: true}, nil
	}
	if err := grant.ValidateResource(prefix + "x"); err != nil {
		return pattern{}, fmt.Errorf("not the start of a valid resource: %v", err)
	}
	return pattern{s: prefix, prefix: true}, nil
}

// splitGlob returns s without a final '*', and whether it had one; a '*'
// anywhere else is an error.
func splitGlob(s string) (prefix string, glob bool, err error) {
	prefix, glob = strings.CutSuffix(s, "*")
	if strings.Contains(prefix, "*") {
		return "", false, errors.New("'*' may only end a pattern")
	}
	return prefix, glob, nil
}

func errOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// Digest is "sha256:" and the hex SHA-256 of the policy's file bytes, to
// tell which policy is in force.
func (p *Policy) Digest() string { return "sha256:" + hex.EncodeToString(p.sum[:]) }

// Rules is the number of rules.
func (p *Policy) Rules() int { return len(p.rules) }

// Authorize implements Authorizer: nil when a rule allows identity to do
// verb to resource, else a *ForbiddenError.
func (p *Policy) Authorize(identity string, verb Verb, resource string) error {
	for _, r := range p.rules {
		if slices.Contains(r.verbs, verb) && matchAny(r.identities, identity) && matchAny(r.resources, resource) {
			return nil
		}
	}
	return &ForbiddenError{Identity: identity, Verb: verb, Resource: resource}
}

func matchAny(ps []pattern, v string) bool {
	return slices.ContainsFunc(ps, func(p pattern) bool { return p.match(v) })
}
