//go:build unix

// This file proves `fencegate gate report` shows the gate inside
// PostgreSQL on a real serve's dashboard and applies a resume confirmed
// there: serve and the reporter run as processes, a resource paused by a
// FENCE_REGRESSION shows PAUSED with its alarm, and once the registry's
// floor is raised and an admin confirms a resume on the page, the
// database's resource is no longer paused, keeps the floor, and records
// the admin as the operator.
package main

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate/pggate"
)

var reportingLine = regexp.MustCompile(`reporting the gate inside PostgreSQL to `)

// reporterStartSkew is past the reporter's default skew bound (500 ms), the
// time after its start before which it refuses a command.
const reporterStartSkew = 600 * time.Millisecond

func TestGateReportShowsAndResumesInsidePostgres(t *testing.T) {
	const res = "ledger/report-paused"
	dir := t.TempDir()
	toks := map[string]string{"ops-admin": "pgr-admin-token-0123456", "pg-gate": "pgr-pg-gate-token-012345"}
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(toks["ops-admin"]+" ops-admin\n"+toks["pg-gate"]+" pg-gate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := startProc(t, "serve", "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--token-file", tokens,
		"--authz-open", "--admin", "ops-admin", "--gate-reporter", "pg-gate", "--unsafe-no-fsync")
	base := serve.waitOutput(t, listenLine)
	dsn := pausedInsidePG(t, res)

	rep := startProc(t, "gate", "report", "--db", dsn, "--report-to", base, "--report-token", toks["pg-gate"],
		"--report-identity", "pg-gate", "--trust-bundle", filepath.Join(dir, "data", "trust-bundle.json"), "--report-interval-ms", "500")
	rep.waitOutput(t, reportingLine)
	// A reporter refuses a command issued within its skew bound (500 ms by
	// default) of its own start, as one the gate may have applied before a
	// restart; an operator confirming that soon is told to confirm again.
	// This story's operator confirms once, so it confirms after that.
	confirmAfter := time.Now().Add(reporterStartSkew)
	for _, want := range []string{`data-gate="pg-gate"`, "<small>gate inside PostgreSQL</small>",
		`<tr class="gate-res paused" data-resource="` + res + `">`, `<small class="rec">FENCE_REGRESSION@3</small>`} {
		waitPage(t, base, toks["ops-admin"], want)
	}

	floor := startProc(t, "floor", "raise", res, "--above", "6", "--note", "INC-9", "--registry", base, "--token", toks["ops-admin"])
	if code := floor.wait(t, "floor raise"); code != 0 {
		t.Fatalf("floor raise: exit %d\n%s%s", code, floor.out, floor.err)
	}
	time.Sleep(time.Until(confirmAfter))
	confirmResume(t, base, toks["ops-admin"], url.Values{"kind": {"gate-resume"}, "gate": {"pg-gate"}, "resource": {res},
		"value": {"6"}, "note": {"INC-9: floor raised"}})
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		st, err := pggate.State(ctx, db, res)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Paused {
			if st.Floor != 6 {
				t.Fatalf("resumed with floor %d, want 6", st.Floor)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the confirmed resume never reached the database:\n%s%s", rep.out, rep.err)
		}
	}
	var operator, detail string
	if err := db.QueryRowContext(ctx, `SELECT operator, detail FROM fencegate.operator_actions WHERE subject = $1 AND action = 'resume'`, res).Scan(&operator, &detail); err != nil {
		t.Fatal(err)
	}
	if operator != "ops-admin" || !strings.Contains(detail, "INC-9: floor raised") {
		t.Fatalf("recorded resume by %q: %s", operator, detail)
	}
	waitPage(t, base, toks["ops-admin"], `resume by ops-admin`)
}

// confirmResume confirms form on the dashboard as the admin whose bearer
// token is tok, typing the resource, as the page's two steps do.
func confirmResume(t *testing.T, base, tok string, form url.Values) {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(path string, f url.Values) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(f.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Origin", base)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	code, body := post("/ui/confirm", form)
	m := regexp.MustCompile(`name="token" value="([^"]+)"`).FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("confirm: %d\n%s", code, body)
	}
	act := url.Values{}
	for k, v := range form {
		act[k] = v
	}
	act.Set("token", strings.ReplaceAll(m[1], "&#43;", "+"))
	act.Set("confirm", form.Get("resource"))
	if code, body := post("/ui/act", act); code != http.StatusSeeOther {
		t.Fatalf("act: %d\n%s", code, body)
	}
}
