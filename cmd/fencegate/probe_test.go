// Proves `fencegate probe s3` passes a store that honours conditional
// writes and fails, with exit status 1 and a clear verdict, the same
// store behind a proxy that strips If-Match / If-None-Match.
package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/internal/s3local"
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
