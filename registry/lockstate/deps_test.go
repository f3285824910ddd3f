// This file pins that the registry's decisions stay pure: package
// lockstate imports only the listed standard packages and grant, wire and
// internal/assert; nothing it links is a network, database or outside
// module; and its source keeps no package variable, map, channel or
// goroutine and uses package time only to name an instant (no Now,
// Since, Sleep, timer). TestThePinCanFail feeds the same checks a package
// that breaks each rule and shows every break caught.
package lockstate_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/fencegate/fencegate"

// importsAllowed is everything lockstate's non-test code may import.
var importsAllowed = []string{
	"crypto/sha256", "encoding/binary", "encoding/hex", "fmt", "slices", "strconv", "time",
	module + "/grant", module + "/wire", module + "/internal/assert",
}

// depsBanned are packages (and their subpackages) nothing lockstate
// links may be: a network, a database, a process, the registry's shell
// and its stores, the clock. (os and math/rand are linked, through
// grant's key files and crypto; the import list keeps them out of the
// decisions themselves.)
var depsBanned = []string{"net", "database", "os/exec", module + "/registry", module + "/clock"}

// timeAllowed are the only names of package time the source may use:
// an instant's type and its conversion from milliseconds, never a clock.
var timeAllowed = []string{"Time", "UnixMilli"}

type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
	GoFiles    []string
	Dir        string
}

// checkImports reports every import and dependency of p the pin forbids.
func checkImports(p listed) []string {
	var bad []string
	for _, imp := range p.Imports {
		if !slices.Contains(importsAllowed, imp) {
			bad = append(bad, "imports "+imp)
		}
	}
	for _, dep := range p.Deps {
		isStd := !strings.Contains(strings.SplitN(dep, "/", 2)[0], ".")
		switch {
		case !isStd && !strings.HasPrefix(dep, module+"/"):
			bad = append(bad, "links outside module "+dep)
		case slices.ContainsFunc(depsBanned, func(b string) bool { return dep == b || strings.HasPrefix(dep, b+"/") }):
			bad = append(bad, "links "+dep)
		}
	}
	return bad
}

// checkSource reports every construct in f the pin forbids.
func checkSource(f *ast.File) []string {
	var bad []string
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.VAR {
			bad = append(bad, "a package variable")
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.MapType:
			bad = append(bad, "a map")
		case *ast.ChanType:
			bad = append(bad, "a channel")
		case *ast.GoStmt:
			bad = append(bad, "a goroutine")
		case *ast.SelectStmt:
			bad = append(bad, "a select")
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "time" && !slices.Contains(timeAllowed, n.Sel.Name) {
				bad = append(bad, "time."+n.Sel.Name)
			}
		}
		return true
	})
	return bad
}

func TestDecisionsArePure(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to list dependencies")
	}
	out, err := exec.Command(goTool, "list", "-json", module+"/registry/lockstate").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var p listed
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Imports) < 3 || len(p.Deps) < 10 || len(p.GoFiles) < 5 {
		t.Fatalf("go list saw %d imports, %d deps, %d files: the check saw too little to mean anything", len(p.Imports), len(p.Deps), len(p.GoFiles))
	}
	for _, b := range checkImports(p) {
		t.Errorf("lockstate %s: the decisions may not (add it to the pin only if it does no I/O and reads no clock)", b)
	}
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range checkSource(f) {
			t.Errorf("lockstate/%s: %s: a decision is a function of its arguments alone", name, b)
		}
	}
}

// TestThePinCanFail shows each rule above catching a package that breaks
// it, and passing lockstate's own shape.
func TestThePinCanFail(t *testing.T) {
	for _, c := range []struct {
		p    listed
		want int
	}{
		{listed{Imports: []string{"os", module + "/registry", "math/rand/v2"}}, 3},
		{listed{Deps: []string{"net/http", "go.etcd.io/etcd/client/v3", "database/sql", module + "/registry/memstore", module + "/clock"}}, 5},
		{listed{Imports: []string{"fmt", module + "/grant"}, Deps: []string{"fmt", "os", "crypto/sha256", module + "/grant", module + "/internal/gencache"}}, 0},
	} {
		if got := checkImports(c.p); len(got) != c.want {
			t.Errorf("%+v: caught %q, want %d", c.p, got, c.want)
		}
	}
	broken := `package lockstate
import "time"
var cache = 0
func decide(ch chan int) time.Time {
	go func() {}()
	select {}
	for range map[string]int{} {}
	time.Sleep(time.Millisecond)
	return time.Now()
}
func fine(ms int64) time.Time { return time.UnixMilli(ms) }`
	f, err := parser.ParseFile(token.NewFileSet(), "broken.go", broken, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := checkSource(f)
	for _, want := range []string{"a package variable", "a channel", "a goroutine", "a select", "a map", "time.Sleep", "time.Millisecond", "time.Now"} {
		if !slices.Contains(got, want) {
			t.Errorf("a source with %s passed the pin (caught %q)", want, got)
		}
	}
	if slices.ContainsFunc(got, func(s string) bool { return s == "time.UnixMilli" || s == "time.Time" }) {
		t.Errorf("the pin refuses naming an instant: %q", got)
	}
}
