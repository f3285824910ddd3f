// This file pins the house's one-way imports, as go list sees them: every
// room of the tree may import only the rooms beneath it (leaf libraries →
// grant → gate → wire → registry → client → the binary), the SDK imports
// no server package, and no product code imports a test kit or the chaos
// suite; only tests do. The negative controls' replacement of the gate's
// decision (gate/gatebreak) is imported by the simulator and tests
// alone. A new arrow fails here until this table says why
// it is allowed. docs/architecture.md draws the same picture.
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
}

// testOnly are rooms only tests (and each other, as listed above) import.
var testOnly = []string{"testkit", "chaos"}

// importedOnlyBy lists packages that only the named rooms' non-test code
// may import; any test may. gate/gatebreak replaces gate.Decide for a
// negative control: the simulator's --break modes use it, and no product
// code may, so the decision cannot be switched off by anything a
// deployment builds or configures.
var importedOnlyBy = map[string][]string{
	module + "/gate/gatebreak": {"sim"},
}

type goPackage struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
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
		if rooms, only := importedOnlyBy[imp]; only && !slices.Contains(rooms, from) {
			errorf("%s (room %s) imports %s, which only %v and tests may import", p.ImportPath, from, imp, rooms)
		}
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

// TestTheTableCanFail feeds the check arrows the house forbids — the SDK
// importing the server; an adapter, the binary and a test kit importing
// the negative controls' replacement of Decide — and two it allows.
func TestTheTableCanFail(t *testing.T) {
	breaker := module + "/gate/gatebreak"
	for _, c := range []struct {
		p    goPackage
		fine bool
	}{
		{goPackage{ImportPath: module + "/client", Imports: []string{module + "/registry"}}, false},
		{goPackage{ImportPath: module + "/gate/sqlgate", Imports: []string{breaker}}, false},
		{goPackage{ImportPath: module + "/cmd/fencegate", Imports: []string{breaker}}, false},
		{goPackage{ImportPath: module + "/testkit/gatetest", Imports: []string{breaker}}, false},
		{goPackage{ImportPath: module + "/sim", Imports: []string{breaker}}, true},
		{goPackage{ImportPath: module + "/gate/memgate", XTestImports: []string{breaker}}, true},
	} {
		var caught []string
		checkPackage(func(format string, args ...any) { caught = append(caught, format) }, c.p)
		if (len(caught) == 0) != c.fine {
			t.Errorf("%s importing %v: caught %d, want caught=%v", c.p.ImportPath, append(c.p.Imports, c.p.XTestImports...), len(caught), !c.fine)
		}
	}
}
