// This file pins the house's one-way imports, as go list sees them: every
// room of the tree may import only the rooms beneath it (leaf libraries →
// grant → gate → wire → registry → client → the binary), the SDK imports
// no server package, and no product code imports a test kit or the chaos
// suite; only tests do. The negative controls' replacement of the gate's
// decision (gate/gatebreak) is linked, through any chain of imports, by
// the simulator's negative controls (sim/negative) and tests alone; and
// the binary, cmd/fencegate, ships the simulator and the demo's services
// but links no negative control, no test kit and not the chaos suite. A
// new arrow fails here until this table says why it is allowed.
// docs/architecture.md draws the same picture.
package fencegate_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/fencegate/fencegate"

// mayImport lists, for each room, the rooms its non-test code may import
// (besides itself). A room is the first path element below the module,
// except internal/, whose packages are leaf libraries each.
var mayImport = map[string][]string{
	"clock":      {},
	"internal":   {}, // leaf libraries: the standard library and outside modules only
	"grant":      {"internal"},
	"gate":       {"grant", "clock", "internal"},
	"downstream": {"gate", "grant", "clock", "internal"},
	"wire":       {"grant", "internal"},
	"registry":   {"wire", "grant", "clock", "internal"},
	"client":     {"wire", "gate", "grant", "clock", "internal"},
	"dashboard":  {"registry", "wire", "gate", "grant", "clock", "internal"},
	// The demo's services are applications: they authenticate callers with
	// the registry's HTTP identity layer, as a deployment of serve does.
	"demo": {"client", "registry", "downstream", "gate", "wire", "grant", "clock", "internal"},
	"sim":  {"client", "registry", "gate", "wire", "grant", "clock", "internal"},
	"cmd":  {"client", "dashboard", "demo", "sim", "registry", "downstream", "gate", "wire", "grant", "clock", "internal"},
	// The proof and test rooms sit on top of the product.
	"testkit": {"client", "registry", "downstream", "gate", "wire", "grant", "clock", "internal"},
	"chaos":   {"testkit", "client", "registry", "demo", "downstream", "gate", "wire", "grant", "clock", "internal"},
	"scripts": {},
	// clients/ holds the clients in other languages; their Go packages are
	// tests only (clients/python runs the Python suite from go test).
	"clients": {},
}

// testOnly are rooms only tests (and each other, as listed above) import.
var testOnly = []string{"testkit", "chaos"}

// linkedOnlyBy lists packages that only the named packages' non-test
// code may link, by importing them or anything that does (a name ending
// in "/..." stands for the package and every package below it); any test
// may. gate/gatebreak replaces gate.Decide for a negative control, and
// sim/negative builds the simulator's negative controls on it: only
// those controls and the command that runs them (sim/cmd/simbreak) may
// link either, so neither the decision nor any protection can be
// switched off by anything a deployment builds, configures or runs.
var linkedOnlyBy = map[string][]string{
	module + "/gate/gatebreak": {module + "/sim/negative", module + "/sim/cmd/simbreak"},
	module + "/sim/negative":   {module + "/sim/cmd/simbreak"},
}

// importedOnlyBy lists packages that only the named packages may import
// directly. The type of gate.Policy.NegativeControl lives in
// gate/internal/replaced: package gate declares the field, gate/adapt
// decides with it and gate/gatebreak sets it; no adapter has a reason to
// touch it.
var importedOnlyBy = map[string][]string{
	module + "/gate/internal/replaced": {module + "/gate", module + "/gate/adapt", module + "/gate/gatebreak"},
}

// The binary's rooms. cmd/fencegate ships the simulator (`fencegate
// sim`, the proof runs a user can repeat on the product as it ships) and
// the demo's two services (`fencegate demo`); through any chain of
// imports it links no negative control (gate/gatebreak, sim/negative),
// no test kit (testkit/…), not the chaos suite, and no example (code to
// copy, free to change). A change to either list is a
// change to what the binary is: docs/architecture.md ("The binary")
// says the same.
var (
	binary      = module + "/cmd/fencegate"
	binaryShips = []string{module + "/sim", module + "/demo/ledger", module + "/demo/resledger"}
	binaryNever = []string{module + "/testkit/...", module + "/chaos/...", module + "/gate/gatebreak", module + "/sim/negative/...",
		module + "/examples/..."}
)

type goPackage struct {
	ImportPath   string
	Imports      []string
	Deps         []string // every package it links, through any chain of imports
	TestImports  []string
	XTestImports []string
}

// matches reports whether import path p is pattern, or below it when the
// pattern ends in "/...".
func matches(p, pattern string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == prefix || strings.HasPrefix(p, prefix+"/")
	}
	return p == pattern
}

func matchesAny(p string, patterns []string) bool {
	return slices.ContainsFunc(patterns, func(pattern string) bool { return matches(p, pattern) })
}

func room(path string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	first, _, _ := strings.Cut(rel, "/")
	return first
}

func TestImportsFlowOneWay(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to list packages")
	}
	cmd := exec.Command(goTool, "list", "-json", "./...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		seen++
		checkPackage(t.Errorf, p)
	}
	if seen < 40 {
		t.Fatalf("go list saw %d packages: the check saw too little to mean anything", seen)
	}
}

func checkPackage(errorf func(format string, args ...any), p goPackage) {
	from := room(p.ImportPath)
	allowed, known := mayImport[from]
	if p.ImportPath == module {
		return // this file
	}
	if !known {
		errorf("%s is in room %q, which the table does not know: add the room and its arrows", p.ImportPath, from)
		return
	}
	for _, imp := range p.Imports {
		if !strings.HasPrefix(imp, module+"/") {
			continue
		}
		to := room(imp)
		switch {
		case to == from && (from != "internal" || imp == p.ImportPath):
		case to == from && from == "internal":
			errorf("%s imports %s: internal/ holds leaf libraries, which import none of the module", p.ImportPath, imp)
		case !slices.Contains(allowed, to):
			errorf("%s (room %s) imports %s (room %s): an arrow the house does not allow", p.ImportPath, from, imp, to)
		}
		if importers, only := importedOnlyBy[imp]; only && !slices.Contains(importers, p.ImportPath) {
			errorf("%s imports %s, which only %v may import", p.ImportPath, imp, importers)
		}
	}
	for _, dep := range p.Deps {
		if linkers, only := linkedOnlyBy[dep]; only && !matchesAny(p.ImportPath, linkers) {
			errorf("%s links %s (through its imports), which only %v and tests may link", p.ImportPath, dep, linkers)
		}
	}
	if p.ImportPath == binary {
		checkBinary(errorf, p)
	}
	// Tests may reach the test kits; product code may not (checked above:
	// testkit and chaos are in no product room's list).
	for _, imp := range append(slices.Clone(p.TestImports), p.XTestImports...) {
		if to := room(imp); strings.HasPrefix(imp, module+"/") && to == "cmd" && from != "cmd" {
			errorf("a test of %s imports the binary's package %s", p.ImportPath, imp)
		}
	}
	for _, r := range testOnly {
		if slices.Contains(allowed, r) && !slices.Contains(testOnly, from) {
			errorf("room %s may import test-only room %s in the table", from, r)
		}
	}
}

// checkBinary holds the binary to its rooms: none of binaryNever among
// what it links, all of binaryShips.
func checkBinary(errorf func(format string, args ...any), p goPackage) {
	for _, dep := range p.Deps {
		if matchesAny(dep, binaryNever) {
			errorf("the binary %s links %s: no negative control, test kit or chaos suite ships in it", p.ImportPath, dep)
		}
	}
	for _, want := range binaryShips {
		if !slices.Contains(p.Deps, want) {
			errorf("the binary %s no longer links %s: if it should not ship, say so in binaryShips and docs/architecture.md", p.ImportPath, want)
		}
	}
}

// TestTheTableCanFail feeds the check arrows the house forbids — the SDK
// importing the server; an adapter, the binary and a test kit importing
// the negative controls' replacement of Decide; the simulator the binary
// ships linking it through another package; an adapter reaching for the
// policy's negative-control type; the binary linking a negative control
// through the simulator, or a test kit, or no longer shipping the
// simulator — and arrows it allows.
func TestTheTableCanFail(t *testing.T) {
	breaker, negative := module+"/gate/gatebreak", module+"/sim/negative"
	ships := append([]string{module + "/gate"}, binaryShips...)
	for _, c := range []struct {
		p    goPackage
		fine bool
	}{
		{goPackage{ImportPath: module + "/client", Imports: []string{module + "/registry"}}, false},
		{goPackage{ImportPath: module + "/gate/sqlgate", Imports: []string{breaker}, Deps: []string{breaker}}, false},
		{goPackage{ImportPath: binary, Imports: []string{breaker}, Deps: append([]string{breaker}, ships...)}, false},
		{goPackage{ImportPath: module + "/testkit/gatetest", Imports: []string{breaker}, Deps: []string{breaker}}, false},
		{goPackage{ImportPath: module + "/sim", Imports: []string{module + "/gate"}, Deps: []string{module + "/gate", breaker}}, false},
		{goPackage{ImportPath: module + "/gate/sqlgate", Imports: []string{module + "/gate/internal/replaced"}}, false},
		{goPackage{ImportPath: binary, Imports: []string{module + "/sim"}, Deps: append([]string{negative, breaker}, ships...)}, false},
		{goPackage{ImportPath: binary, Imports: []string{module + "/sim"}, Deps: append([]string{module + "/testkit/fakeclock"}, ships...)}, false},
		{goPackage{ImportPath: binary, Imports: []string{module + "/demo/ledger"}, Deps: []string{module + "/demo/ledger", module + "/demo/resledger"}}, false},
		{goPackage{ImportPath: binary, Imports: []string{module + "/sim"}, Deps: ships}, true},
		{goPackage{ImportPath: negative, Imports: []string{breaker, module + "/sim"}, Deps: []string{breaker, module + "/sim"}}, true},
		{goPackage{ImportPath: module + "/sim/cmd/simbreak", Imports: []string{negative}, Deps: []string{negative, breaker}}, true},
		{goPackage{ImportPath: module + "/gate/adapt", Imports: []string{module + "/gate/internal/replaced"}}, true},
		{goPackage{ImportPath: module + "/gate/memgate", XTestImports: []string{breaker}}, true},
	} {
		var caught []string
		checkPackage(func(format string, args ...any) { caught = append(caught, format) }, c.p)
		if (len(caught) == 0) != c.fine {
			t.Errorf("%s importing %v, linking %v: caught %d, want caught=%v", c.p.ImportPath, append(c.p.Imports, c.p.XTestImports...), c.p.Deps, len(caught), !c.fine)
		}
	}
}
