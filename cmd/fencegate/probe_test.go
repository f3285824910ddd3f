// Proves `fencegate probe s3` passes a store that honours conditional
// writes and fails, with exit status 1 and a clear verdict, the same
// store behind a proxy that strips If-Match / If-None-Match; and `fencegate
// probe redis` passes a redis-server with appendfsync always and fails,
// naming the setting, one without persistence and one with appendfsync
// everysec, unless --accept-fence-loss, which warns on stderr.
package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/testkit/redistest"
	"github.com/fencegate/fencegate/testkit/s3local"
)

func TestProbeS3(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, bucket := s3local.NewBucket(t)
	proxy, err := s3local.StripConditions(ctx, s3local.Endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "fencegate")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fencegate-secret")
	for _, row := range []struct {
		endpoint string
		code     int
		verdict  string
	}{
		{s3local.Endpoint(t), 0, "RESULT: the store honours conditional writes"},
		{proxy.URL, 1, "RESULT: this store cannot fence writes"},
	} {
		var out, errb bytes.Buffer
		code := run(ctx, []string{"probe", "s3", "--endpoint", row.endpoint, "--bucket", bucket}, &out, &errb)
		if code != row.code || !strings.Contains(out.String(), row.verdict) {
			t.Fatalf("%s: exit %d (want %d)\n%s%s", row.endpoint, code, row.code, out.String(), errb.String())
		}
		t.Logf("%s\n%s%s", row.endpoint, out.String(), errb.String())
	}
}

func TestProbeRedis(t *testing.T) {
	for _, row := range []struct {
		name    string
		args    []string
		accept  bool
		code    int
		verdict string // a pattern of stdout
		warning string // in stderr
	}{
		{"appendfsync always", redistest.Durable, false, 0, "RESULT: the server keeps every acknowledged write", ""},
		{"no persistence", redistest.Unpersisted, false, 1, `(?m)^\s+appendonly\s+no\s+want yes\s+FAIL: .*a restart loses every write$`, ""},
		{"appendfsync everysec", redistest.AOFEverysec, false, 1, `(?m)^\s+appendfsync\s+everysec\s+want always\s+FAIL: a crash of the machine`, ""},
		{"appendfsync everysec, accepted", redistest.AOFEverysec, true, 0, "ACCEPTED by --accept-fence-loss", "WARNING: --accept-fence-loss"},
	} {
		t.Run(row.name, func(t *testing.T) {
			srv := redistest.StartServer(t, row.args...)
			args := []string{"probe", "redis", "--url", "redis://" + srv.Addr()}
			if row.accept {
				args = append(args, "--accept-fence-loss")
			}
			out, errOut, code := runCLI(args...)
			t.Logf("exit %d\n%s%s", code, out, errOut)
			if code != row.code || !regexp.MustCompile(row.verdict).MatchString(out) || !strings.Contains(errOut, row.warning) {
				t.Fatalf("exit %d (want %d), stdout wants %q, stderr %q", code, row.code, row.verdict, row.warning)
			}
		})
	}
}
