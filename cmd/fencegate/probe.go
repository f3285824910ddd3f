package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencegate/fencegate/gate/objgate"
)

func init() {
	register(command{name: "probe", summary: "check that a store can fence writes (probe s3: conditional writes)", run: runProbe})
}

const probeUsage = `usage: fencegate probe s3 --endpoint URL --bucket NAME [--prefix P] [--region R] [--virtual-host]

Proves that an S3-compatible store honours conditional writes, which
gate/objgate's fencing rests on: on a fresh key under the prefix it
creates an object with If-None-Match: * (must succeed), creates it again
(must be refused, 412), replaces it with If-Match: <its ETag> (must
succeed), then with the stale and a made-up ETag (412 both), and deletes
it. objgate runs the same check at start and refuses enforce mode on a
store that fails it. Credentials come from AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (anonymous if unset).
Exit status 0 if the store passed, 1 if it did not.`

func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "s3" {
		fmt.Fprintln(stderr, probeUsage)
		return fmt.Errorf("%w: want `probe s3`", errUsage)
	}
	fs := newFlags("probe s3", stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, probeUsage+"\n\nflags:"); fs.PrintDefaults() }
	endpoint := fs.String("endpoint", "", "the store's URL, e.g. https://s3.eu-west-1.amazonaws.com (required)")
	bucket := fs.String("bucket", "", "an existing bucket (required)")
	prefix := fs.String("prefix", objgate.PrefixDefault, "key prefix of the probe object")
	region := fs.String("region", "us-east-1", "region to sign requests for")
	virtual := fs.Bool("virtual-host", false, "virtual-hosted bucket addressing (default: path style)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *endpoint == "" || *bucket == "" || fs.NArg() > 0 {
		return fmt.Errorf("%w: --endpoint and --bucket are required", errUsage)
	}
	c := s3.New(s3.Options{BaseEndpoint: endpoint, Region: *region, UsePathStyle: !*virtual, Credentials: envCredentials(),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired})
	rep := objgate.ProbeDetail(ctx, c, *bucket, *prefix)
	fmt.Fprintf(stdout, "probe %s bucket %s key %s\n", *endpoint, *bucket, rep.Key)
	for _, s := range rep.Steps {
		verdict := "ok"
		if s.Got != s.Want {
			verdict = "FAIL"
		}
		fmt.Fprintf(stdout, "  %-40s want %s got %-4s %s\n", s.Name, s.Want, s.Got, verdict)
	}
	if rep.Err != nil {
		fmt.Fprintln(stdout, "RESULT: this store cannot fence writes; objgate refuses enforce mode on it")
		return rep.Err
	}
	fmt.Fprintln(stdout, "RESULT: the store honours conditional writes; objgate can enforce on it")
	return nil
}

// envCredentials reads the standard AWS variables; nil (anonymous) if
// the key is unset.
func envCredentials() aws.CredentialsProvider {
	id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if id == "" {
		return nil
	}
	token := os.Getenv("AWS_SESSION_TOKEN")
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: token, Source: "environment"}, nil
	})
}
