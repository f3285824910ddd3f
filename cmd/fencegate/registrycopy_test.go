//go:build unix

// Proves `fencegate registry export` and `import` with real processes on
// stopped serves' data directories: an export streamed through a pipe
// into an import (more records and request entries than one page, and
// than one progress report) copies every line; an import of an export
// cut short mid-line stops, says where to resume, and re-run with
// --resume-after completes to the same store as an uninterrupted one; an
// import into a store that moved on never lowers it: a resource the
// target advanced keeps its own higher fences, one the source advanced
// gets its floor raised above the source's.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// copyResources is how many resources the copy tests fill: more than one
// export page (256) of records and of request entries, and more lines
// than one import progress report (1000).
const copyResources = 520

// fillRegistry acquires and releases n resources copy/NNN once each
// through the registry at url, eight at a time.
func fillRegistry(t *testing.T, url string, n int) {
	t.Helper()
	rc := adminClient(t, url)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res := fmt.Sprintf("copy/%03d", i)
			is, err := rc.Acquire(context.Background(), wire.AcquireRequest{Resource: res, OperationID: "fill", OperationClass: "copy", RequestID: "fill-" + res[5:]})
			if err == nil {
				err = rc.Release(context.Background(), res, is.Grant.Lease)
			}
			if err != nil {
				errs <- fmt.Errorf("%s: %w", res, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// exportContent is an export's content by kind.
type exportContent struct {
	settings lockstate.Settings
	records  map[string]*lockstate.Record
	requests map[string]*lockstate.RequestEntry
	raw      map[string]string // record and request lines as written, by key
	end      registry.ExportLine
}

// readExport parses an export file strictly enough for the checks.
func readExport(t *testing.T, path string) exportContent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ex := exportContent{records: map[string]*lockstate.Record{}, requests: map[string]*lockstate.RequestEntry{}, raw: map[string]string{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, registry.ExportLineBytesMax)
	for sc.Scan() {
		var l registry.ExportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch l.Kind {
		case registry.LineSettings:
			ex.settings = *l.Settings
		case registry.LineRecord:
			ex.records[l.Resource], ex.raw["r "+l.Resource] = l.Record, sc.Text()
		case registry.LineRequest:
			ex.requests[l.Owner+"/"+l.RequestID], ex.raw["q "+l.Owner+"/"+l.RequestID] = l.Entry, sc.Text()
		case registry.LineEnd:
			ex.end = l
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ex
}

// exportTo runs `registry export --data-dir data --out path`.
func exportTo(t *testing.T, data, path string) exportContent {
	t.Helper()
	cli(t, 0, "registry", "export", "--data-dir", data, "--out", path)
	return readExport(t, path)
}

// pipeCLI runs `fencegate left... | fencegate right...` as two processes
// joined by a pipe, as a shell would, and returns right's stderr.
func pipeCLI(t *testing.T, left, right []string) string {
	t.Helper()
	env := append(os.Environ(), envTestAsCLI+"=1")
	l, r := exec.Command(os.Args[0], left...), exec.Command(os.Args[0], right...)
	l.Env, r.Env = env, env
	var lErr, rErr bytes.Buffer
	l.Stderr, r.Stderr = &lErr, &rErr
	pipe, err := l.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Stdin = pipe
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	lWait, rWait := l.Wait(), r.Wait()
	if lWait != nil || rWait != nil {
		t.Fatalf("export | import: %v, %v:\n%s\n%s", lWait, rWait, lErr.String(), rErr.String())
	}
	return rErr.String()
}

var resumeLine = regexp.MustCompile(`--resume-after (\d+)`)

func TestRegistryExportImportProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, addr := filepath.Join(dir, "src"), freeAddr(t)
	serve := serveAt(t, src, addr)
	url := "http://" + addr
	fillRegistry(t, url, copyResources)
	if _, err := adminClient(t, url).RaiseFloor(context.Background(), "copy/007", 50); err != nil {
		t.Fatal(err)
	}
	stopProc(t, serve, "serve on the source")
	whole := exportTo(t, src, filepath.Join(dir, "whole.jsonl"))
	if len(whole.records) != copyResources || len(whole.requests) != copyResources || whole.end.Records != copyResources {
		t.Fatalf("export: %d records, %d requests, end %+v; want %d each", len(whole.records), len(whole.requests), whole.end, copyResources)
	}

	// Streamed: export | import into a new store, then the same lines.
	piped := filepath.Join(dir, "piped")
	errOut := pipeCLI(t, []string{"registry", "export", "--data-dir", src}, []string{"registry", "import", "--data-dir", piped})
	if strings.Count(errOut, "applied through line") < 2 || !strings.Contains(errOut, fmt.Sprintf("%d added", copyResources)) || !strings.Contains(errOut, "complete") {
		t.Fatalf("piped import's report:\n%s", errOut)
	}
	sameLines(t, "piped", whole, exportTo(t, piped, filepath.Join(dir, "piped.jsonl")))

	// Interrupted: an export cut mid-line stops the import where it
	// breaks; run again with --resume-after, it completes to the same.
	raw, err := os.ReadFile(filepath.Join(dir, "whole.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.jsonl")
	if err := os.WriteFile(cut, raw[:len(raw)*3/5], 0o600); err != nil {
		t.Fatal(err)
	}
	resumed := filepath.Join(dir, "resumed")
	_, errOut = cli(t, 1, "registry", "import", "--data-dir", resumed, "--in", cut)
	n := atoiMatch(t, resumeLine, errOut)
	if n < 100 || n >= uint64(bytes.Count(raw, []byte("\n"))) {
		t.Fatalf("the cut import says resume after line %d:\n%s", n, errOut)
	}
	_, errOut = cli(t, 0, "registry", "import", "--data-dir", resumed, "--in", filepath.Join(dir, "whole.jsonl"), "--resume-after", strconv.FormatUint(n, 10))
	if !strings.Contains(errOut, "complete") {
		t.Fatalf("the resumed import:\n%s", errOut)
	}
	sameLines(t, "resumed", whole, exportTo(t, resumed, filepath.Join(dir, "resumed.jsonl")))

	// Never lowered: the target takes copy/000 further, the source
	// copy/001; importing the source's new export again keeps the one and
	// raises the other's floor.
	serve = serveAt(t, resumed, addr)
	for range 3 {
		lockFence(t, url, "copy/000")
	}
	stopProc(t, serve, "serve on the target")
	serve = serveAt(t, src, addr)
	for range 2 {
		lockFence(t, url, "copy/001")
	}
	stopProc(t, serve, "serve on the source")
	newer := exportTo(t, src, filepath.Join(dir, "newer.jsonl"))
	_, errOut = cli(t, 0, "registry", "import", "--data-dir", resumed, "--in", filepath.Join(dir, "newer.jsonl"))
	if !strings.Contains(errOut, "1 raised, 1 kept") {
		t.Errorf("import into the moved-on target reports:\n%s", errOut)
	}
	after := exportTo(t, resumed, filepath.Join(dir, "after.jsonl"))
	if got := after.records["copy/000"].HighestFence; got != 4 {
		t.Errorf("copy/000 on the target: highest fence %d, want its own 4", got)
	}
	if got := after.records["copy/001"]; got.Floor != newer.records["copy/001"].HighestFence || got.Floor != 3 {
		t.Errorf("copy/001 on the target: floor %d, want the source's highest 3", got.Floor)
	}
	for res, rec := range newer.records {
		have := after.records[res]
		if max(have.HighestFence, have.Floor) < max(rec.HighestFence, rec.Floor) {
			t.Errorf("%s: the target's fences end at %d, below the source's %d", res, max(have.HighestFence, have.Floor), max(rec.HighestFence, rec.Floor))
		}
	}
}

// sameLines fails unless got holds exactly want's record and request
// lines and settings.
func sameLines(t *testing.T, what string, want, got exportContent) {
	t.Helper()
	if got.settings != want.settings || len(got.raw) != len(want.raw) {
		t.Fatalf("%s: settings %+v, %d lines; want %+v, %d", what, got.settings, len(got.raw), want.settings, len(want.raw))
	}
	for k, v := range want.raw {
		if got.raw[k] != v {
			t.Fatalf("%s: %s:\n got %s\nwant %s", what, k, got.raw[k], v)
		}
	}
}
