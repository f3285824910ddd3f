//go:build unix

// Proves `fencegate serve --zookeeper` with real processes against a real
// ZooKeeper (TLS with a client certificate, digest auth): a serve process
// and two `fencegate lock` processes get fences 1 and 2, the registry's
// nodes are under --zookeeper-root, /metrics names the engine; a wrong
// password makes serve exit 1 with its cause and the flags to check; and
// the flag checks refuse --zookeeper with --etcd-endpoints and the
// --zookeeper-* flags without --zookeeper.
package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/registry/zkstore"
	"github.com/fencegate/fencegate/testkit/zktest"
)

func TestServeOnZooKeeper(t *testing.T) {
	zk := zktest.Start(t, zktest.Options{TLS: true})
	const root, user, password = "/apps/fencegate", "fencegate", "zk-password-for-tests"
	zkFlags := []string{"--zookeeper", zk.TLSAddr, "--zookeeper-root", root,
		"--zookeeper-cacert", zk.PKI.CAFile, "--zookeeper-cert", zk.PKI.ClientCert, "--zookeeper-key", zk.PKI.ClientKey,
		"--zookeeper-user", user, "--zookeeper-dial-timeout", "60s"} // a JVM's TLS handshake under CI's load
	t.Setenv("FENCEGATE_ZOOKEEPER_PASSWORD", password)
	serve, url := serveProc(t, append([]string{"--viewer", "worker-1"}, zkFlags...)...)
	for i, want := range []string{"fence=1", "fence=2"} {
		p := lockProc(t, url, "zk/smoke", "--no-wait", "--", "sh", "-c", `echo "fence=$FENCEGATE_FENCE"`)
		if code := p.wait(t, want); code != 0 || !strings.Contains(p.out.String(), want) {
			t.Fatalf("lock %d: exit %d, want %s:\n%s%s\nserve:\n%s", i+1, code, want, p.out, p.err, serve.err)
		}
	}
	if !strings.Contains(serve.err.String(), "using ZooKeeper") {
		t.Errorf("serve does not say it runs on ZooKeeper:\n%s", serve.err)
	}
	if body := getAuthed(t, url+"/metrics"); !strings.Contains(body, `fencegate_store_info{engine="zookeeper"} 1`) {
		t.Errorf("/metrics does not name the engine:\n%s", grepLines(body, "store"))
	}
	if body := getAuthed(t, url+"/ui/"); !strings.Contains(body, `<b id="store-engine">ZooKeeper</b>`) {
		t.Errorf("the dashboard does not name the engine:\n%s", grepLines(body, "lives in"))
	}

	// The registry's nodes are the digest user's, under the root.
	cfg := zkstore.ClientConfig{Servers: []string{zk.TLSAddr}, CACertFile: zk.PKI.CAFile, CertFile: zk.PKI.ClientCert, KeyFile: zk.PKI.ClientKey,
		Username: user, Password: password}
	conn, err := zkstore.Dial(context.Background(), cfg, root)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if names, _, err := conn.Children(root + "/r"); err != nil || len(names) != 1 {
		t.Fatalf("records under %s/r: %v %v", root, names, err)
	}

	// A wrong password, on the plain port (over TLS the client
	// certificate's identity would be let in by itself: the nodes' ACL
	// names every identity of the session that made them).
	t.Setenv("FENCEGATE_ZOOKEEPER_PASSWORD", "wrong")
	dir := t.TempDir()
	args := []string{"serve", "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--token-file", writeTokenFile(t, dir), "--authz-open",
		"--zookeeper", zk.Addr, "--zookeeper-root", root, "--zookeeper-user", user}
	_, errOut, code := runCLI(args...)
	if code != 1 || !strings.Contains(errOut, "not authenticated") || !strings.Contains(errOut, "check --zookeeper") {
		t.Errorf("wrong password: exit %d, stderr %q; want 1, the refusal and what to check", code, errOut)
	}
}

// getAuthed returns url's body, fetched with the tests' bearer token.
func getAuthed(t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+serveToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(body)
}

func TestServeZooKeeperFlags(t *testing.T) {
	dir := t.TempDir()
	base := []string{"serve", "--data-dir", filepath.Join(dir, "data"), "--token-file", writeTokenFile(t, dir), "--authz-open"}
	for _, c := range []struct {
		flags []string
		want  *regexp.Regexp
	}{
		{[]string{"--zookeeper", "zk:2181", "--etcd-endpoints", "http://etcd:2379"}, regexp.MustCompile(`two stores: give one`)},
		{[]string{"--zookeeper-user", "u"}, regexp.MustCompile(`need --zookeeper`)},
		{[]string{"--zookeeper", "zk:2181/chroot"}, regexp.MustCompile(`chroot goes in the root`)},
		{[]string{"--zookeeper", "zk:2181", "--zookeeper-user", "u"}, regexp.MustCompile(`needs a password`)},
		{[]string{"--zookeeper", "zk:2181", "--zookeeper-cert", "c.pem"}, regexp.MustCompile(`go together`)},
		{[]string{"--zookeeper", "zk:2181", "--zookeeper-dial-timeout", "0s"}, regexp.MustCompile(`--zookeeper-dial-timeout" flag: 0 is not accepted`)},
	} {
		_, errOut, code := runCLI(append(append([]string{}, base...), c.flags...)...)
		if code != 2 || !c.want.MatchString(errOut) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %s", c.flags, code, errOut, c.want)
		}
	}
}
