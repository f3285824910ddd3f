// Package s3local runs an S3-compatible server in-process on a loopback
// port, for the tests and the demo: gofakes3 (github.com/johannesboyne/
// gofakes3) with its memory backend, which checks If-Match and
// If-None-Match on PutObject under the backend's lock and answers 412 on a
// mismatch — the conditional writes objgate's safety rests on. It also
// offers the negative control: a proxy that strips those headers, as
// stores that ignore them do in effect.
//
// Tests call Endpoint, which starts one server per test binary, or uses
// FENCEGATE_TEST_S3_ENDPOINT (an external store; credentials from
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY). When neither works the test
// skips loudly, unless FENCEGATE_REQUIRE_S3=1 (CI), which fails it.
package s3local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Environment variables.
const (
	EnvEndpoint = "FENCEGATE_TEST_S3_ENDPOINT" // use this store instead of starting one
	EnvRequire  = "FENCEGATE_REQUIRE_S3"       // "1": an unavailable store fails the test
)

// Region is the region the clients sign for; the local server ignores it.
const Region = "us-east-1"

// Server is one running local store.
type Server struct {
	URL string // http://127.0.0.1:PORT
	srv *http.Server
	ln  net.Listener
}

// Start serves a fresh, empty store on a free loopback port until ctx
// ends or Close is called.
func Start(ctx context.Context) (*Server, error) {
	return serve(ctx, gofakes3.New(s3mem.New(), gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
}

// StripConditions starts a proxy in front of target that removes
// If-Match and If-None-Match from every request: a store that ignores
// conditional writes.
func StripConditions(ctx context.Context, target string) (*Server, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = r.In.Host
		r.Out.Header.Del("If-Match")
		r.Out.Header.Del("If-None-Match")
	}}
	return serve(ctx, p)
}

func serve(ctx context.Context, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("s3local: listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	go s.srv.Serve(ln)
	go func() {
		<-ctx.Done()
		s.Close()
	}()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Client returns an S3 client for endpoint (path-style addressing, static
// credentials, checksums only where the API requires them, which every
// S3-compatible store accepts).
func Client(endpoint, accessKey, secretKey string) *s3.Client {
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secretKey, Source: "s3local"}, nil
	})
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(endpoint), Region: Region, UsePathStyle: true, Credentials: creds,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// CreateBucket creates bucket, succeeding if it exists already.
func CreateBucket(ctx context.Context, c *s3.Client, bucket string) error {
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket})
	var owned interface{ ErrorCode() string }
	if errors.As(err, &owned) && (owned.ErrorCode() == "BucketAlreadyOwnedByYou" || owned.ErrorCode() == "BucketAlreadyExists") {
		return nil
	}
	return err
}

var (
	once     sync.Once
	shared   *Server
	endpoint string
	initErr  error
	seq      atomic.Uint64
)

// Endpoint returns the tests' store, starting the local one on first use.
func Endpoint(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if endpoint = os.Getenv(EnvEndpoint); endpoint != "" {
			return
		}
		shared, initErr = Start(context.Background())
		if initErr == nil {
			endpoint = shared.URL
		}
	})
	if initErr != nil {
		if os.Getenv(EnvRequire) != "1" {
			t.Skipf("s3local: *** SKIPPING S3 TESTS: %v; set %s=1 to make this a failure ***", initErr, EnvRequire)
		}
		t.Fatalf("s3local: S3-compatible store required but unavailable: %v", initErr)
	}
	return endpoint
}

// NewBucket returns a client of the tests' store and a fresh bucket.
func NewBucket(t testing.TB) (*s3.Client, string) {
	t.Helper()
	ep := Endpoint(t)
	c := Client(ep, envOr("AWS_ACCESS_KEY_ID", "fencegate"), envOr("AWS_SECRET_ACCESS_KEY", "fencegate-secret"))
	bucket := fmt.Sprintf("fg-%d-%d", os.Getpid(), seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := CreateBucket(ctx, c, bucket); err != nil {
		if os.Getenv(EnvRequire) != "1" {
			t.Skipf("s3local: *** SKIPPING S3 TESTS: create bucket at %s: %v; set %s=1 to make this a failure ***", ep, err, EnvRequire)
		}
		t.Fatalf("s3local: create bucket at %s: %v", ep, err)
	}
	return c, bucket
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
