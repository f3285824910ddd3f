package dashboard

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// assetServer serves the embedded CSS and script at /ui/assets/.
func assetServer() http.Handler {
	sub, err := fs.Sub(assetFS, ".")
	if err != nil {
		panic(err)
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=300")
		files.ServeHTTP(w, r)
	})
}

// pages are the parsed templates, parsed on first use (New parses them,
// so serve fails at start on a bad template): every command of the
// binary links this package, and parsing at init cost each of them
// about a millisecond before main.
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"ms":      ms,
		"clock":   func(atMs int64) string { return time.UnixMilli(atMs).UTC().Format("15:04:05.000") },
		"time":    func(t time.Time) string { return t.UTC().Format("15:04:05 UTC") },
		"outcome": outcomeClass,
		"join":    strings.Join,
		"paused":  anyPaused,
		"gateCell": func(p pageData, c GateCell, resource, label string) gateCellData {
			return gateCellData{Cell: c, Resource: resource, Label: label, Admin: p.Viewer.Admin}
		},
		"slotGates": func(slots []ResourceRow) bool {
			return slices.ContainsFunc(slots, func(r ResourceRow) bool { return len(r.Gates) > 0 })
		},
		"members":  setMembers,
		"ageSince": func(nowMs, atMs int64) string { return ms(max(nowMs-atMs, 0)) },
		"percent":  func(f float64) string { return strconv.FormatFloat(100*f, 'f', 2, 64) + "%" },
	}).ParseFS(templateFS, "templates/*.html"))
})

// outcomeClass is the CSS class of an outcome's colour: ok (ACCEPTED,
// REPLAYED), stale (the expected rejection of a former owner), alarm
// (FENCE_REGRESSION, RESOURCE_PAUSED, QUARANTINED), or other.
func outcomeClass(o string) string {
	switch o {
	case "ACCEPTED", "REPLAYED":
		return "o-ok"
	case "STALE_OWNER":
		return "o-stale"
	case "FENCE_REGRESSION", "RESOURCE_PAUSED", "QUARANTINED", "ERROR":
		return "o-alarm"
	}
	return "o-reject"
}

// gateCellData is one gate's cell in a resource's row: the gate's view
// of Resource (a semaphore's slot under Label "slot i · "), with the
// resume link for an admin.
type gateCellData struct {
	Cell            GateCell
	Resource, Label string
	Admin           bool
}

// setMember is one member of a lock set shown in a resource's row: the
// row's own resource (Self, not linked) or another member (linked to
// its row).
type setMember struct {
	Resource string
	Self     bool
}

// setMembers is a lock set's members, in the set's order, as the row of
// self shows them.
func setMembers(set []string, self string) []setMember {
	out := make([]setMember, 0, len(set))
	for _, m := range set {
		out = append(out, setMember{Resource: m, Self: m == self})
	}
	return out
}

func anyPaused(cells []GateCell) bool {
	for _, c := range cells {
		if c.Paused {
			return true
		}
	}
	return false
}

// render writes template name with status; a template error is a bug
// and answers 500 with nothing of the half-written page.
func (d *Dashboard) render(w http.ResponseWriter, status int, name string, v any) {
	var buf bytes.Buffer
	if err := pages().ExecuteTemplate(&buf, name, v); err != nil {
		http.Error(w, "dashboard: render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// pageData is a page for one viewer: only what the viewer may see.
type pageData struct {
	*data
	Viewer viewer
	Flash  *Action // the action just taken, when redirected from /ui/act
}

func (d *Dashboard) pageFor(r *http.Request) pageData {
	v := viewerFrom(r.Context())
	p := pageData{data: d.forViewer(d.snapshot(r.Context()), v), Viewer: v}
	if id := r.URL.Query().Get("action"); id != "" {
		for i := range p.Actions {
			if p.Actions[i].ID == id {
				p.Flash = &p.Actions[i]
			}
		}
	}
	return p
}

func (d *Dashboard) page(w http.ResponseWriter, r *http.Request) {
	d.render(w, http.StatusOK, "page.html", d.pageFor(r))
}

// live is the live part of the page alone (the script's polling fallback).
func (d *Dashboard) live(w http.ResponseWriter, r *http.Request) {
	d.render(w, http.StatusOK, "live", d.pageFor(r))
}

// Event streams.
const (
	// StreamsMax bounds concurrent event streams; past it /ui/events
	// answers 503 and the script polls instead.
	StreamsMax = 16
	// StreamLifeMs ends a stream after 10 min; the browser reconnects (and
	// is authenticated again).
	StreamLifeMs = 10 * 60 * 1000
	// streamTickMs is how often a stream checks for a change, 1 s.
	streamTickMs = 1000
	// streamKeepaliveMs sends a comment on a quiet stream, 15 s.
	streamKeepaliveMs = 15_000
)

// events streams the live part as server-sent events, each time it
// changes.
func (d *Dashboard) events(w http.ResponseWriter, r *http.Request) {
	select {
	case d.streams <- struct{}{}:
		defer func() { <-d.streams }()
	default:
		http.Error(w, "dashboard: too many event streams; poll /ui/live", http.StatusServiceUnavailable)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "dashboard: streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	tick := time.NewTicker(streamTickMs * time.Millisecond)
	defer tick.Stop()
	end := time.After(StreamLifeMs * time.Millisecond)
	var last []byte
	quiet := 0
	for {
		var buf bytes.Buffer
		if err := pages().ExecuteTemplate(&buf, "live", d.pageFor(r)); err != nil {
			return
		}
		if frag := buf.Bytes(); !bytes.Equal(frag, last) {
			fmt.Fprint(w, "event: live\n")
			for _, line := range bytes.Split(frag, []byte("\n")) {
				fmt.Fprintf(w, "data: %s\n", line)
			}
			fmt.Fprint(w, "\n")
			last, quiet = frag, 0
		} else if quiet++; quiet*streamTickMs >= streamKeepaliveMs {
			fmt.Fprint(w, ": keepalive\n\n")
			quiet = 0
		}
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-end:
			return
		case <-tick.C:
		}
	}
}
