//go:build unix

// Proves that a refusal ends a wait (issue 43): against a serve whose
// resource policy lets worker-1 acquire and see only jobs/*, `lock`,
// `elect` and `elect --observe` on another resource, or with a token the
// registry does not know, stop at once with the refusal printed, the
// flag or policy to fix named, and exit 1, nothing run; and an observer
// whose identity loses `see` while it watches (the policy edited, then
// SIGHUP) stops at the next poll instead of retrying once a second
// forever.
package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// refusalWait bounds how long a refused command may take to exit: one
// call and a readiness check, far from the old once-a-second forever.
const refusalWait = 10 * time.Second

func TestRefusalsEndWaits(t *testing.T) {
	dir := t.TempDir()
	policy := writeFile(t, dir, "policy.json", `{"schema": "resourcePolicy.v1", "rules": [
  {"identities": ["worker-1"], "resources": ["jobs/*"], "verbs": ["acquire", "see"]}]}`)
	serve, url := serveProcPolicy(t, dir, policy)
	for _, c := range []struct {
		name  string
		args  []string
		wants []string
	}{
		{"lock forbidden", []string{"lock", "secret/x", "--token", lockToken, "--", "sh", "-c", "echo RAN"}, []string{"FORBIDDEN_RESOURCE", "--authz-policy"}},
		{"elect forbidden", []string{"elect", "secret/x", "--token", lockToken, "--", "sh", "-c", "echo RAN"}, []string{"FORBIDDEN_RESOURCE", "--authz-policy"}},
		{"observe forbidden", []string{"elect", "--observe", "secret/x", "--token", lockToken}, []string{"FORBIDDEN_RESOURCE", "--authz-policy"}},
		{"lock bad token", []string{"lock", "jobs/x", "--token", "not-a-known-token", "--", "sh", "-c", "echo RAN"}, []string{"UNAUTHENTICATED", "--token or FENCEGATE_TOKEN", "fencegate-dev-token"}},
		{"observe bad token", []string{"elect", "--observe", "jobs/x", "--token", "not-a-known-token"}, []string{"UNAUTHENTICATED", "--token or FENCEGATE_TOKEN"}},
	} {
		p := startProc(t, append([]string{c.args[0], "--registry", url}, c.args[1:]...)...)
		select {
		case <-p.done:
		case <-time.After(refusalWait):
			t.Fatalf("%s: still waiting after %s:\n%s%s", c.name, refusalWait, p.out, p.err)
		}
		if p.code != 1 || strings.Contains(p.out.String(), "RAN") {
			t.Errorf("%s: exit %d, want 1 with nothing run:\n%s%s", c.name, p.code, p.out, p.err)
		}
		for _, w := range c.wants {
			if !strings.Contains(p.err.String(), w) {
				t.Errorf("%s: stderr lacks %q:\n%s", c.name, w, p.err)
			}
		}
	}

	// Refused while watching: allowed at first, then the policy drops
	// `see`; the next poll (woken by a lock change) is refused.
	obs := startProc(t, "elect", "--observe", "jobs/watched", "--registry", url, "--token", lockToken)
	obs.waitOutput(t, regexp.MustCompile(`jobs/watched: no leader`))
	writeFile(t, dir, "policy.json", `{"schema": "resourcePolicy.v1", "rules": [
  {"identities": ["worker-1"], "resources": ["jobs/*"], "verbs": ["acquire"]}]}`)
	if err := syscall.Kill(serve.cmd.Process.Pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	lock := startProc(t, "lock", "jobs/watched", "--registry", url, "--token", lockToken, "--", "true")
	if code := lock.wait(t, "lock"); code != 0 {
		t.Fatalf("lock exited %d:\n%s", code, lock.err)
	}
	select {
	case <-obs.done:
	case <-time.After(refusalWait):
		t.Fatalf("the observer still runs %s after losing `see`:\n%s%s", refusalWait, obs.out, obs.err)
	}
	if obs.code != 1 || !strings.Contains(obs.err.String(), "FORBIDDEN_RESOURCE") {
		t.Fatalf("observer: exit %d, want 1 with the refusal:\n%s", obs.code, obs.err)
	}
}

// serveProcPolicy is serveProc under a resource policy, reloaded on
// SIGHUP only.
func serveProcPolicy(t *testing.T, dir, policy string) (*proc, string) {
	t.Helper()
	p := startProc(t, "serve", "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0",
		"--token-file", writeTokenFile(t, dir), "--unsafe-no-fsync", "--authz-policy", policy, "--authz-poll-ms", "0")
	return p, p.waitOutput(t, listenLine)
}
