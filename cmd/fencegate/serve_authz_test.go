//go:build unix

// Proves serve's resource policy from outside: started with
// --authz-policy, a worker locks what the policy gives it and is refused
// anything else (403 FORBIDDEN_RESOURCE naming itself, the verb and the
// resource, with an audit line in serve's log); an edit of the file is in
// force after SIGHUP (polling off: PolicyFile.Watch's own test covers a
// change noticed by polling); a bad edit keeps the policy in force and
// the log says why; --authz-open says so loudly.
package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/wire"
)

func TestServeEnforcesAndReloadsItsResourcePolicy(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	policy := writeFile(t, dir, "policy.json", `{"schema": "resourcePolicy.v1", "rules": [
  {"identities": ["worker-1"], "resources": ["team-a/*"], "verbs": ["acquire", "see"]}]}`)
	s := startServe(t, "--data-dir", data, "--listen", "127.0.0.1:0", "--token-file", writeTokenFile(t, dir), "--unsafe-no-fsync",
		"--authz-policy", policy, "--authz-poll-ms", "0") // reloads on SIGHUP only, until the end

	if !strings.Contains(s.stderr.String(), `msg="resource policy loaded" file=`+policy) {
		t.Errorf("serve does not say which policy it loaded:\n%s", s.stderr)
	}
	c := s.client(t, filepath.Join(data, httpapi.BundleFileName))
	ctx := context.Background()
	acquire := func(resource, req string) error {
		_, err := c.Acquire(ctx, wire.AcquireRequest{Resource: resource, OperationID: "op", OperationClass: "settle", RequestID: req})
		return err
	}
	if err := acquire("team-a/one", "r-1"); err != nil {
		t.Fatalf("an allowed acquire: %v", err)
	}
	refused := func(resource, req string) {
		t.Helper()
		err := acquire(resource, req)
		if !errors.Is(err, &httpclient.APIError{Code: wire.CodeForbiddenResource}) || !strings.Contains(err.Error(), "worker-1 may not acquire "+resource) {
			t.Fatalf("acquire %s: %v, want FORBIDDEN_RESOURCE naming worker-1, acquire and %s", resource, err, resource)
		}
	}
	refused("team-b/one", "r-2")
	if !strings.Contains(s.stderr.String(), `msg="access refused" audit=true identity=worker-1 verb=acquire resource=team-b/one path=/v1/acquire outcome=FORBIDDEN_RESOURCE via=api`) {
		t.Errorf("no audit line for the refusal:\n%s", s.stderr)
	}

	// SIGHUP: the edit is in force at once.
	writeFile(t, dir, "policy.json", `{"schema": "resourcePolicy.v1", "rules": [
  {"identities": ["worker-1"], "resources": ["team-b/*"], "verbs": ["acquire"]}]}`)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the edit after SIGHUP", func() bool { return acquire("team-b/one", "r-3") == nil })
	refused("team-a/two", "r-4")
	// A bad edit: the policy in force stays, and the log says why.
	writeFile(t, dir, "policy.json", `{"schema": "resourcePolicy.v1", "rules": [{"identities": ["worker-1"], "resources": ["*"], "verbs": ["steal"]}]}`)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the refusal of the bad edit", func() bool {
		return strings.Contains(s.stderr.String(), `level=ERROR msg="resource policy not reloaded: keeping the policy in force"`)
	})
	refused("team-a/two", "r-5")
	if err := acquire("team-b/two", "r-6"); err != nil {
		t.Errorf("the policy in force before the bad edit: %v", err)
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, s.stderr)
	}

	open := startServe(t, "--data-dir", filepath.Join(dir, "open"), "--listen", "127.0.0.1:0", "--token-file", writeTokenFile(t, dir), "--unsafe-no-fsync", "--authz-open")
	if !strings.Contains(open.stderr.String(), "WARNING: AUTHORIZATION OPEN (--authz-open)") || !strings.Contains(open.stderr.String(), "level=WARN") {
		t.Errorf("--authz-open is not said loudly:\n%s", open.stderr)
	}
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within 10 s", what)
}
