// This file proves docs/architecture.md names only what exists: every
// file, directory, package, command's package and Go name in backticks
// in the rooms table, the arrows (list and paragraphs; not the drawing),
// "The binary", the packages column of "Parts", the rule table ("Which
// file holds which rule": its second column and the paragraphs after it)
// and the "Core and shell" table is looked up in the tree. A file
// renamed, a function gone or a package moved fails here until the page
// says where the rule went. TestTheDocCheckCanFail feeds the check names
// of a missing file, a missing function, a file in the wrong directory,
// a glob that matches nothing, a package's missing names, a command
// whose package is gone, a directory that is not there and a name the
// root's tests do not declare, and shows each caught. And "The binary"
// names every room imports_test.go pins the binary to link or not
// (TestTheBinarySectionNamesItsRooms, with its negative control).
package fencegate_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// docSections are the parts of docs/architecture.md the check reads:
// heading, and which table column it checks (-1: every column).
var docSections = []struct {
	heading    string
	column     int
	paragraphs paragraphs
}{
	{"## The rooms", -1, noParagraphs},
	{"## The arrows", -1, allParagraphs},
	{"## The binary", -1, allParagraphs},
	{"## Parts", 0, noParagraphs},
	{"## Which file holds which rule", 1, paragraphsAfterTable},
	{"## Core and shell: where the simulator meets the product", -1, noParagraphs},
}

// paragraphs says which of a section's paragraphs (and list items, each
// read alone) the check reads.
type paragraphs int

const (
	noParagraphs paragraphs = iota
	paragraphsAfterTable
	allParagraphs
)

// codeIndex is what the tree declares: for each directory, the Go names
// declared in its non-test files (top-level names, and Type.Method and
// Type.Field, each also by its last name); and the directories of each
// package name.
type codeIndex struct {
	root     string
	declared map[string]map[string]bool // dir → names
	pkgDirs  map[string][]string        // package name → dirs
}

func indexTree(t *testing.T, root string) *codeIndex {
	t.Helper()
	ix := &codeIndex{root: root, declared: map[string]map[string]bool{}, pkgDirs: map[string][]string{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "examples") {
			return filepath.SkipDir
		}
		// The root package is tests only (this file, imports_test.go):
		// its names are indexed; every other test file's are not.
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") && filepath.Dir(path) != filepath.Clean(root) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		dir = filepath.ToSlash(dir)
		ix.add(dir, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func (ix *codeIndex) add(dir string, f *ast.File) {
	names := ix.declared[dir]
	if names == nil {
		names = map[string]bool{}
		ix.declared[dir] = names
		ix.pkgDirs[f.Name.Name] = append(ix.pkgDirs[f.Name.Name], dir)
	}
	member := func(typ, name string) { names[name], names[typ+"."+name] = true, true }
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			names[d.Name.Name] = true
			if d.Recv != nil {
				member(receiverType(d.Recv.List[0].Type), d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names[s.Name.Name] = true
					for _, m := range typeMembers(s.Type) {
						member(s.Name.Name, m)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names[n.Name] = true
					}
				}
			}
		}
	}
}

func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// typeMembers lists a struct's fields or an interface's methods.
func typeMembers(e ast.Expr) []string {
	var list *ast.FieldList
	switch x := e.(type) {
	case *ast.StructType:
		list = x.Fields
	case *ast.InterfaceType:
		list = x.Methods
	default:
		return nil
	}
	var out []string
	for _, f := range list.List {
		for _, n := range f.Names {
			out = append(out, n.Name)
		}
	}
	return out
}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	goName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	fileName   = regexp.MustCompile(`^[A-Za-z0-9_.-]+\.(go|sql|md|yaml|yml|txt)$`)
)

var goKeywords = []string{"break", "case", "chan", "const", "continue", "default", "defer", "else", "fallthrough",
	"for", "func", "go", "goto", "if", "import", "interface", "map", "package", "range", "return", "select", "struct", "switch", "type", "var"}

// checkText checks every backticked name in text, one table cell or
// paragraph, and returns what it names that does not exist. Paths are
// looked up from the root; a bare file name in the directory the text
// last named; a Go name qualified by a package (gate.Decide,
// client/core.Lease) in that package, an unqualified one in the
// directories (and those below them) the text names, or anywhere when
// it names none; a glob must match a file. Anything else in backticks
// (an expression, a flag, a command line) is prose.
func (ix *codeIndex) checkText(text string) []string {
	var (
		missing []string
		context []string // directories named so far
		lastDir string
		names   []string
	)
	for _, m := range backticked.FindAllStringSubmatch(text, -1) {
		tok := strings.TrimSuffix(strings.ReplaceAll(m[1], `\|`, "|"), "/")
		tok = strings.TrimSuffix(strings.TrimSuffix(tok, "/…"), "/...") // a directory and all below it
		switch {
		case strings.HasPrefix(tok, "go run ./"):
			if pkg := strings.TrimPrefix(strings.Fields(tok)[2], "./"); !ix.exists(pkg) {
				missing = append(missing, tok+": runs "+pkg+", which does not exist")
			}
		case strings.Contains(tok, "*") && !strings.ContainsAny(tok, " ()"):
			if m, _ := filepath.Glob(filepath.Join(ix.root, filepath.FromSlash(tok))); len(m) == 0 {
				missing = append(missing, tok+": matches no file")
			}
		case strings.Contains(tok, " "): // a command line, or an expression
		case strings.Contains(tok, "/") && !strings.Contains(filepath.Base(tok), ".") || strings.Contains(tok, "/") && fileName.MatchString(filepath.Base(tok)):
			if !ix.exists(tok) {
				missing = append(missing, tok+": no such file or directory")
				continue
			}
			lastDir = tok
			if fileName.MatchString(filepath.Base(tok)) {
				lastDir = filepath.ToSlash(filepath.Dir(tok))
			}
			context = append(context, lastDir)
		case strings.Contains(tok, "/") && goName.MatchString(tok[strings.LastIndex(tok, "/")+1:]):
			// a package path and a name in it: client/core.Lease
			slash := strings.LastIndex(tok, "/")
			dir, name, _ := strings.Cut(tok[slash+1:], ".")
			dir = tok[:slash+1] + dir
			if !ix.exists(dir) || !ix.declaredIn([]string{dir}, name, false) {
				missing = append(missing, tok+": not declared")
			}
		case fileName.MatchString(tok) && !strings.HasSuffix(tok, ".md"):
			switch {
			case (lastDir == "" || !ix.exists(lastDir+"/"+tok)) && ix.exists(tok):
				context = append(context, ".") // a file of the root package
			case lastDir == "":
				missing = append(missing, tok+": a bare file name with no directory named before it")
			case !ix.exists(lastDir + "/" + tok):
				missing = append(missing, tok+": not in "+lastDir+"/")
			}
		case goName.MatchString(tok) && !slices.Contains(goKeywords, tok):
			first, rest, qualified := strings.Cut(tok, ".")
			if dirs, ok := ix.pkgDirs[first]; ok {
				if !qualified {
					context = append(context, dirs...) // a package named as a whole
				} else if !ix.declaredIn(dirs, rest, false) {
					missing = append(missing, tok+": not declared in package "+first)
				}
				continue
			}
			if ix.isDir(tok) { // a top-level directory: internal/, examples/, docs/
				lastDir = tok
				context = append(context, tok)
				continue
			}
			names = append(names, tok)
		}
	}
	slices.Sort(context)
	context = slices.Compact(context)
	for _, n := range names {
		if !ix.declaredIn(context, n, true) {
			missing = append(missing, n+": not declared in "+strings.Join(context, ", "))
		}
	}
	return missing
}

func (ix *codeIndex) isDir(path string) bool {
	fi, err := os.Stat(filepath.Join(ix.root, filepath.FromSlash(path)))
	return err == nil && fi.IsDir()
}

func (ix *codeIndex) exists(path string) bool {
	_, err := os.Stat(filepath.Join(ix.root, filepath.FromSlash(path)))
	return err == nil
}

// declaredIn reports whether name (Name, or Type.Name) is declared in
// one of dirs (with below: or a directory under one of them; no dirs:
// anywhere).
func (ix *codeIndex) declaredIn(dirs []string, name string, below bool) bool {
	for dir, names := range ix.declared {
		if !names[name] {
			continue
		}
		if len(dirs) == 0 && below {
			return true
		}
		for _, d := range dirs {
			if dir == d || below && strings.HasPrefix(dir, d+"/") {
				return true
			}
		}
	}
	return false
}

// docTexts returns the cells and paragraphs of docs/architecture.md the
// check reads, each with where it is.
func docTexts(t *testing.T, page string) map[string]string {
	t.Helper()
	out := map[string]string{}
	lines := strings.Split(page, "\n")
	for _, sec := range docSections {
		start := slices.Index(lines, sec.heading)
		if start < 0 {
			t.Fatalf("docs/architecture.md has no section %q: the check reads it (architecture_doc_test.go)", sec.heading)
		}
		seenTable, inCode, para := false, false, ""
		flush := func(at int) {
			read := sec.paragraphs == allParagraphs || sec.paragraphs == paragraphsAfterTable && seenTable
			if strings.TrimSpace(para) != "" && read {
				out[sec.heading+", paragraph before line "+strconv.Itoa(at+1)] = para
			}
			para = ""
		}
		for i := start + 1; i < len(lines) && !strings.HasPrefix(lines[i], "## "); i++ {
			line := lines[i]
			switch {
			case strings.HasPrefix(line, "```"):
				flush(i)
				inCode = !inCode
			case inCode: // a drawing: its names are not backticked
			case strings.HasPrefix(line, "- "):
				flush(i) // a list item is read alone
				para = " " + line
			case strings.HasPrefix(line, "|"):
				seenTable = true
				cells := splitRow(line)
				if strings.HasPrefix(strings.TrimSpace(cells[0]), "---") || i+1 < len(lines) && strings.HasPrefix(lines[i+1], "|---") {
					continue // the separator, or the header above it
				}
				for c, cell := range cells {
					if sec.column < 0 || c == sec.column {
						out[sec.heading+", line "+strconv.Itoa(i+1)+", column "+strconv.Itoa(c+1)] = cell
					}
				}
			case strings.TrimSpace(line) == "":
				flush(i)
			default:
				para += " " + line
			}
		}
		flush(len(lines))
	}
	return out
}

// splitRow splits a table row at its unescaped pipes, keeping each
// cell's bytes as they are (UTF-8 included).
func splitRow(line string) []string {
	line = strings.Trim(strings.TrimSpace(line), "|")
	var cells []string
	start := 0
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			i++ // an escaped pipe stays in the cell
		case line[i] == '|':
			cells, start = append(cells, line[start:i]), i+1
		}
	}
	return append(cells, line[start:])
}

func TestArchitectureNamesWhatExists(t *testing.T) {
	page, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	ix := indexTree(t, ".")
	texts := docTexts(t, string(page))
	checked := 0
	for where, text := range texts {
		checked += len(backticked.FindAllString(text, -1))
		for _, m := range ix.checkText(text) {
			t.Errorf("docs/architecture.md, %s: %s", where, m)
		}
	}
	if len(texts) < 20 || checked < 100 {
		t.Fatalf("read %d cells and paragraphs, %d names: the check saw too little to mean anything", len(texts), checked)
	}
}

// TestTheDocCheckCanFail shows the check catching a table that names a
// file that does not exist, a function its file does not declare, a
// file in the wrong directory, and a package's missing name, and
// passing the same row written right.
func TestTheDocCheckCanFail(t *testing.T) {
	ix := indexTree(t, ".")
	for _, c := range []struct {
		text    string
		missing int
	}{
		{"`gate/decide.go` (`Decide`, `applyMode`); `registry/lockstate` (`state.go`, `DecideAcquire`); `gate.Decide`, `client/core.Lease`", 0},
		{"`gate/decide_gone.go` (`Decide`)", 1},
		{"`gate/decide.go` (`DecideNoMore`)", 1},
		{"`registry/lockstate` (`vanished.go`)", 1},
		{"`registry/transfer*.go`, `registry/nothing*.go`", 1},
		{"`gate.Undecided`, `client/core.Leash`, `registry.Normalize`", 3},
		{"`max(highestFence, floor) + 1`, `--break`, `fencegate registry export`/`import`", 0},
		{"`go run ./sim/cmd/simbreak --unsafe`, `go run ./sim/cmd/simbroken --unsafe`", 1},
		{"`testkit/…`, `sim/negative/…`, `testkit/nokit/…`", 1},
		{"`internal/`, `examples/`, `nowhere/`", 1},
		{"`imports_test.go` (`binaryShips`, `checkBinary`, `binaryAlways`)", 1},
	} {
		if got := ix.checkText(c.text); len(got) != c.missing {
			t.Errorf("%s: caught %q, want %d", c.text, got, c.missing)
		}
	}
}

// binarySection is the text of docs/architecture.md's "The binary".
func binarySection(t *testing.T) string {
	t.Helper()
	page, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(page), "\n## The binary\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no section "## The binary": imports_test.go's binaryShips and binaryNever are said there`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	return sec
}

// unnamedRooms lists the rooms of binaryShips and binaryNever (paths
// below the module; "/..." as "/…") that text does not name in
// backticks.
func unnamedRooms(text string) []string {
	var out []string
	for _, p := range append(slices.Clone(binaryShips), binaryNever...) {
		rel := strings.TrimPrefix(p, module+"/")
		if r, ok := strings.CutSuffix(rel, "/..."); ok {
			rel = r + "/…"
		}
		if !strings.Contains(text, "`"+rel+"`") {
			out = append(out, rel)
		}
	}
	return out
}

// TestTheBinarySectionNamesItsRooms holds "The binary" to what
// imports_test.go pins: every room the binary must link and every room
// it must not is named there, so the page cannot say the binary ships
// something the test forbids, or leave out a room the test adds. The
// same section with a room taken out is caught.
func TestTheBinarySectionNamesItsRooms(t *testing.T) {
	sec := binarySection(t)
	if missing := unnamedRooms(sec); len(missing) > 0 {
		t.Errorf("docs/architecture.md, The binary: names none of %v, which imports_test.go pins (binaryShips, binaryNever)", missing)
	}
	cut := strings.ReplaceAll(sec, "`gate/gatebreak`", "the decision's replacement")
	if missing := unnamedRooms(cut); !slices.Equal(missing, []string{"gate/gatebreak"}) {
		t.Errorf("the section without gate/gatebreak: caught %v, want [gate/gatebreak]", missing)
	}
}
