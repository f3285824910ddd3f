package resledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/demo/ledger"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/gate/redisgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/httpapi"
)

// ServeOptions run a resledger as a process.
type ServeOptions struct {
	Listen      string // "127.0.0.1:0" for any free port
	Resource    string // "redis" or "s3"
	RedisAddr   string // host:port of redis-server (Resource redis)
	S3Endpoint  string // the store's URL (Resource s3)
	Bucket      string // created if missing (Resource s3)
	Prefix      string // starts every key: keeps a fenced and a lease-only ledger apart
	TrustBundle string // the registry's trust bundle (required unless LeaseOnly)
	TokenFile   string // bearer tokens → identities, the registry's format
	LeaseOnly   bool   // the negative control
	// Report, with a URL, pushes the gate's state to that registry's
	// dashboard, as demo/ledger's does (its Read is not used).
	Report ledger.ReportOptions
}

// Serve runs a resledger until ctx ends. It prints "ledger: listening on
// http://ADDR, …" once it accepts connections.
func Serve(ctx context.Context, o ServeOptions, stdout io.Writer) error {
	auth, err := httpapi.LoadTokenFile(o.TokenFile)
	if err != nil {
		return err
	}
	var pol gate.Policy
	if !o.LeaseOnly {
		b, err := grant.LoadBundle(o.TrustBundle)
		if err != nil {
			return fmt.Errorf("resledger: trust bundle: %w", err)
		}
		pol.Verifier = grant.NewVerifier(b, 0)
	}
	store, closeStore, err := OpenStore(ctx, o, pol)
	if err != nil {
		return err
	}
	defer closeStore()
	srv := NewServer(store, auth, o.LeaseOnly)
	if o.Report.URL != "" {
		if err := srv.startReporter(ctx, o.Report, store, pol); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "ledger: listening on http://%s, %s\n", ln.Addr(), store.Describe())
	return httpapi.Serve(ctx, ln, srv, nil)
}

// OpenStore connects to the resource o names and, unless LeaseOnly, puts
// its gate in front (policy pol).
func OpenStore(ctx context.Context, o ServeOptions, pol gate.Policy) (Store, func(), error) {
	switch o.Resource {
	case "redis":
		c := redis.NewClient(&redis.Options{Addr: o.RedisAddr})
		s := &RedisStore{Client: c, Prefix: o.Prefix}
		if !o.LeaseOnly {
			// Open checks the server's persistence and refuses enforce
			// mode, naming the setting, on one that can lose fences.
			g, err := redisgate.Open(ctx, redisgate.Config{Client: c, Policy: pol, Prefix: o.Prefix + "gate:"})
			if err != nil {
				c.Close()
				return nil, nil, err
			}
			s.Gate = g
		}
		return s, func() { c.Close() }, c.Ping(ctx).Err()
	case "s3":
		c := s3Client(o.S3Endpoint)
		if err := createBucket(ctx, c, o.Bucket); err != nil {
			return nil, nil, fmt.Errorf("resledger: bucket %s: %w", o.Bucket, err)
		}
		s := &S3Store{Client: c, Bucket: o.Bucket, Prefix: o.Prefix}
		if !o.LeaseOnly {
			g, err := objgate.Open(ctx, objgate.Config{Client: c, Bucket: o.Bucket, Prefix: o.Prefix + "gate/", Policy: pol})
			if err != nil {
				return nil, nil, err
			}
			s.Gate = g
		}
		return s, func() {}, nil
	}
	return nil, nil, fmt.Errorf("resledger: resource %q (want redis or s3)", o.Resource)
}

// s3Client reaches endpoint path-style with the standard AWS variables
// (or the local demo store's placeholder credentials).
func s3Client(endpoint string) *s3.Client {
	id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if id == "" {
		id, secret = "fencegate-demo", "fencegate-demo"
	}
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: os.Getenv("AWS_SESSION_TOKEN")}, nil
	})
	return s3.New(s3.Options{BaseEndpoint: aws.String(endpoint), Region: "us-east-1", UsePathStyle: true, Credentials: creds,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired})
}

func createBucket(ctx context.Context, c *s3.Client, bucket string) error {
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket})
	var code interface{ ErrorCode() string }
	if errors.As(err, &code) && (code.ErrorCode() == "BucketAlreadyOwnedByYou" || code.ErrorCode() == "BucketAlreadyExists") {
		return nil
	}
	return err
}
