// Tests `fencegate serve` in-process: flag errors, the restart requirement
// (grants, fences and request IDs survive a stop and start on one data
// dir; the next fence is higher), and two replicas on one etcd never
// holding two leases at once, with fences strictly increasing.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/etcdstore"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/wire"
)

const serveToken = "serve-test-token-0123456789"

// syncBuffer is a bytes.Buffer safe to read while serve writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// served is one serve process running in-process.
type served struct {
	url            string
	stdout, stderr *syncBuffer
	stop           func() int // cancels and waits; returns the exit code
}

var listenLine = regexp.MustCompile(`listening on (https?://\S+)`)

// startServe runs serve with args and waits for its listen line.
func startServe(t *testing.T, args ...string) *served {
	t.Helper()
	return startInProcess(t, listenLine, append([]string{"serve"}, args...)...)
}

// startInProcess runs a long-running command in-process and waits until
// a stdout line matches ready; its first group becomes url.
func startInProcess(t *testing.T, ready *regexp.Regexp, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, s.stdout, s.stderr) }()
	var once sync.Once
	code := -1
	s.stop = func() int {
		once.Do(func() { cancel(); code = <-done })
		return code
	}
	t.Cleanup(func() { s.stop() })
	for i := 0; i < 1200; i++ { // bounded: embedded etcd starts in a few seconds
		if m := ready.FindStringSubmatch(s.stdout.String()); m != nil {
			s.url = m[1]
			return s
		}
		select {
		case c := <-done:
			done <- c // for stop, in the cleanup
			t.Fatalf("%s exited %d before it was ready:\n%s%s", args[0], c, s.stdout, s.stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("%s never printed its ready line:\n%s%s", args[0], s.stdout, s.stderr)
	return nil
}

func (s *served) client(t *testing.T, bundlePath string) *httpclient.Client {
	t.Helper()
	b, err := grant.LoadBundle(bundlePath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := httpclient.NewClient(s.url, httpclient.WithBearerToken(serveToken), httpclient.WithVerifier(grant.NewVerifier(b, 0)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func writeTokenFile(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "tokens")
	if err := os.WriteFile(p, []byte(serveToken+" worker-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestServeFlags(t *testing.T) {
	dir := t.TempDir()
	tok := writeTokenFile(t, dir)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--token-file", tok}, "--data-dir is required"},
		{[]string{"--data-dir", dir}, "no identity, no service"},
		{[]string{"--data-dir", dir, "--token-file", tok, "--tls-cert", "c.pem"}, "go together"},
		{[]string{"--data-dir", dir, "--token-file", tok, "--client-ca", "ca.pem"}, "--client-ca needs"},
		{[]string{"--data-dir", dir, "--token-file", tok, "--issuer-epoch", "0"}, "at least 1"},
		{[]string{"--data-dir", dir, "--token-file", tok, "--admin", "Not/Valid"}, "admin identity"},
		{[]string{"--data-dir", dir, "--token-file", tok, "extra"}, "unexpected argument"},
		{[]string{"--data-dir", dir, "--token-file", tok, "--lock-delay-ms", "100", "--clock-skew-max-ms", "200"}, "lockDelayMs 100 below clockSkewMaxMs 200"},
		{[]string{"--data-dir", dir, "--token-file", tok, "--ttl-min-ms", "5000", "--ttl-max-ms", "4000"}, "ttlMsMin 5000 above ttlMsMax 4000"},
		{[]string{"--data-dir", dir, "--token-file", tok}, "who may lock what? give --authz-policy FILE"},
		{[]string{"--data-dir", dir, "--token-file", tok, "--authz-open", "--authz-policy", "p.json"}, "exclude each other"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"serve"}, c.args...), &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut.String(), c.want)
		}
	}
}

// TestServeValidatesBeforeTouchingDataDir: a bad or missing resource
// policy, a bad TLS file, an unreadable key, a busy listen address or a
// bad etcd option fails before the data directory exists.
func TestServeValidatesBeforeTouchingDataDir(t *testing.T) {
	dir := t.TempDir()
	tok := writeTokenFile(t, dir)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--authz-policy", writeFile(t, dir, "bad-policy.json", `{"schema":"resourcePolicy.v1","rules":[]}`)}, 1, "--authz-policy"},
		{[]string{"--authz-policy", filepath.Join(dir, "none.json")}, 1, "no such file"},
		{[]string{"--tls-cert", filepath.Join(dir, "none.pem"), "--tls-key", filepath.Join(dir, "none-key.pem")}, 1, "no such file"},
		{[]string{"--key", filepath.Join(dir, "none.key")}, 1, "--key"},
		{[]string{"--listen", busy.Addr().String()}, 1, "address already in use"},
		{[]string{"--listen", "127.0.0.1:http"}, 2, "port must be a number"},
		{[]string{"--etcd-endpoints", "ftp://etcd:2379"}, 2, "want http(s)://host:port"},
		{[]string{"--etcd-cert", "c.pem"}, 2, "give --etcd-endpoints too"},
		{[]string{"--etcd-endpoints", "http://etcd:2379", "--etcd-cacert", "ca.pem"}, 2, "no https:// endpoint"},
		{[]string{"--etcd-quota-bytes", "1048576"}, 2, "want 16777216 (16 MiB) to 8589934592 (8 GiB)"},
	} {
		data := filepath.Join(dir, "data")
		args := append([]string{"serve", "--data-dir", data, "--token-file", tok}, c.args...)
		if !slices.Contains(c.args, "--authz-policy") {
			args = append(args, "--authz-open")
		}
		_, errOut, code := runCLI(args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.want)
		}
		if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%v: the data directory was created before the flags were validated", c.args)
		}
	}
}

// TestServeRestartKeepsEverything is the restart requirement: acquire,
// stop, start on the same data dir; the request ID still names the same
// grant, the key and bundle are reused, and the next fence is higher.
func TestServeRestartKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	args := []string{"--data-dir", data, "--listen", "127.0.0.1:0", "--token-file", writeTokenFile(t, dir), "--unsafe-no-fsync",
		"--ttl-default-ms", "7000", "--authz-open", "--etcd-quota-bytes", "33554432"}
	bundle := filepath.Join(data, httpapi.BundleFileName)
	ctx := context.Background()

	s1 := startServe(t, args...)
	if !strings.Contains(s1.stderr.String(), "generated signing key") {
		t.Errorf("first start did not say it generated a key:\n%s", s1.stderr)
	}
	if !strings.Contains(s1.stdout.String(), "trust bundle "+bundle) {
		t.Errorf("first start did not print the bundle path:\n%s", s1.stdout)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := http.Get(s1.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d, want 200 with the embedded etcd up", path, resp.StatusCode)
		}
	}
	storeSpaceMetrics(t, s1.url, "33554432")
	req := wire.AcquireRequest{Resource: "invoice-batch/2026-07-19", OperationID: "op-1", OperationClass: "settle", RequestID: "req-1"}
	first, err := s1.client(t, bundle).Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if first.Grant.TTLMs != 7000 {
		t.Errorf("grant TTL %d ms, want --ttl-default-ms 7000", first.Grant.TTLMs)
	}
	if code := s1.stop(); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, s1.stderr)
	}

	s2 := startServe(t, args...)
	if strings.Contains(s2.stderr.String(), "generated") {
		t.Errorf("restart generated a new key:\n%s", s2.stderr)
	}
	c := s2.client(t, bundle) // the old bundle still verifies what the new process signs
	again, err := c.QueryRequest(ctx, "req-1")
	if err != nil || !bytes.Equal(again.Grant.Encode(), first.Grant.Encode()) || again.Status.State != grant.StateHeld {
		t.Fatalf("request ID after restart: %v", err)
	}
	if err := c.Release(ctx, req.Resource, first.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	next, err := c.Acquire(ctx, wire.AcquireRequest{Resource: req.Resource, OperationID: "op-2", OperationClass: "settle", RequestID: "req-2"})
	if err != nil {
		t.Fatal(err)
	}
	if next.Grant.FenceToken <= first.Grant.FenceToken {
		t.Fatalf("fence after restart %d, not above %d", next.Grant.FenceToken, first.Grant.FenceToken)
	}
	if code := s2.stop(); code != 0 {
		t.Fatalf("second stop: exit %d\n%s", code, s2.stderr)
	}
}

// storeSpaceMetrics wants serve's /metrics to show the embedded member's
// quota as --etcd-quota-bytes set it, and a file size above 0, once the
// space watch's first poll is in (it runs at start).
func storeSpaceMetrics(t *testing.T, url, quota string) {
	t.Helper()
	quotaLine := regexp.MustCompile(`(?m)^fencegate_store_quota_bytes (\S+)$`)
	sizeLine := regexp.MustCompile(`(?m)^fencegate_store_size_bytes (\S+)$`)
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		q, sz := quotaLine.FindStringSubmatch(body), sizeLine.FindStringSubmatch(body)
		if q == nil || sz == nil {
			break
		}
		want, _ := strconv.ParseFloat(quota, 64)
		got, _ := strconv.ParseFloat(q[1], 64)
		if size, _ := strconv.ParseFloat(sz[1], 64); got == want && size > 0 {
			return
		}
	}
	t.Fatalf("/metrics: want fencegate_store_quota_bytes %s and a size above 0:\n%s", quota, grepLines(body, "fencegate_store_"))
}

// TestTwoReplicasOneEtcd runs two serve replicas on one (embedded) etcd
// and has workers on both fight over one resource through HTTP.
func TestTwoReplicasOneEtcd(t *testing.T) {
	dir := t.TempDir()
	em, err := etcdstore.StartEmbedded(context.Background(), filepath.Join(dir, "etcd"), etcdstore.EmbeddedOptions{UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	key, err := grant.GenerateKey(grant.AlgEd25519, "shared-key", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, "key.json")
	if err := os.WriteFile(keyPath, key.MarshalKeyFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := writeTokenFile(t, dir)
	var replicas []*served
	var clients []*httpclient.Client
	for i := range 2 {
		data := filepath.Join(dir, fmt.Sprintf("replica-%d", i))
		s := startServe(t, "--data-dir", data, "--listen", "127.0.0.1:0", "--token-file", tok, "--authz-open",
			"--etcd-endpoints", strings.Join(em.Endpoints(), ","), "--key", keyPath)
		replicas = append(replicas, s)
		clients = append(clients, s.client(t, filepath.Join(data, httpapi.BundleFileName)))
	}

	const workers, rounds = 6, 12
	fences := contend(t, clients, workers, rounds)
	if len(fences) != workers*rounds {
		t.Fatalf("%d grants, want %d", len(fences), workers*rounds)
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fences not strictly increasing in grant order: %v", fences)
		}
	}
	for _, s := range replicas {
		if code := s.stop(); code != 0 {
			t.Errorf("stop: exit %d\n%s", code, s.stderr)
		}
	}
}

// contend runs workers that each acquire (waiting), check they are the
// only holder while the other replica confirms HELD, and release, rounds
// times, spread over clients. It returns the fences in grant order.
func contend(t *testing.T, clients []*httpclient.Client, workers, rounds int) []uint64 {
	t.Helper()
	var (
		mu      sync.Mutex
		holders int
		fences  []uint64
		wg      sync.WaitGroup
		fail    = make(chan error, workers)
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%2]
			for r := range rounds {
				is, err := c.Acquire(context.Background(), wire.AcquireRequest{
					Resource: "shared/one", OperationID: fmt.Sprintf("op-%d-%d", w, r), OperationClass: "settle",
					RequestID: fmt.Sprintf("w%d-r%d", w, r), WaitMs: 20_000,
				})
				if err != nil {
					fail <- fmt.Errorf("worker %d round %d: %w", w, r, err)
					return
				}
				mu.Lock()
				holders++
				bad := holders > 1
				fences = append(fences, is.Grant.FenceToken)
				mu.Unlock()
				if bad {
					fail <- errors.New("two HELD grants at once")
					return
				}
				// While holding, the other replica must agree it is HELD.
				st, err := clients[(w+1)%2].Status(context.Background(), is.Grant)
				if err != nil || st.Status.State != grant.StateHeld {
					fail <- fmt.Errorf("worker %d: other replica's status: %v", w, err)
					return
				}
				mu.Lock()
				holders--
				mu.Unlock()
				if err := c.Release(context.Background(), "shared/one", is.Grant.Lease); err != nil {
					fail <- fmt.Errorf("worker %d release: %w", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(fail)
	for err := range fail {
		t.Error(err)
	}
	return fences
}
