package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/spf13/cobra"
)

func init() { register(newProbeCmd) }

const probeLong = `Prove that an S3-compatible store honours conditional writes, which
gate/objgate's fencing rests on: on a fresh key under the prefix it
creates an object with If-None-Match: * (must succeed), creates it again
(must be refused, 412), replaces it with If-Match: <its ETag> (must
succeed), then with the stale and a made-up ETag (412 both), and deletes
it. objgate runs the same check at start and refuses enforce mode on a
store that fails it. Credentials come from AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (anonymous if unset).
Exit status 0 if the store passed, 1 if it did not.`

func newProbeCmd() *cobra.Command {
	c := parentCommand("probe", "check that a store can fence writes (s3: conditional writes; redis: persistence)", "")
	var endpoint, bucket, prefix, region string
	var virtual bool
	s3cmd := &cobra.Command{
		Use:     "s3 --endpoint URL --bucket NAME",
		Short:   "check that an S3-compatible store honours conditional writes",
		Long:    probeLong,
		Example: "  fencegate probe s3 --endpoint https://s3.eu-west-1.amazonaws.com --bucket ledger --region eu-west-1",
		RunE: func(c *cobra.Command, _ []string) error {
			if endpoint == "" || bucket == "" {
				return usagef("--endpoint and --bucket are required")
			}
			return runProbeS3(c.Context(), c.OutOrStdout(), endpoint, bucket, prefix, region, virtual)
		},
	}
	fs := s3cmd.Flags()
	fs.StringVar(&endpoint, "endpoint", "", "the store's URL, e.g. https://s3.eu-west-1.amazonaws.com (required)")
	fs.StringVar(&bucket, "bucket", "", "an existing bucket (required)")
	fs.StringVar(&prefix, "prefix", objgate.PrefixDefault, "key prefix of the probe object")
	fs.StringVar(&region, "region", "us-east-1", "region to sign requests for")
	fs.BoolVar(&virtual, "virtual-host", false, "virtual-hosted bucket addressing (default: path style)")
	c.AddCommand(s3cmd, newProbeRedisCmd())
	return c
}

func runProbeS3(ctx context.Context, stdout io.Writer, endpoint, bucket, prefix, region string, virtual bool) error {
	c := s3.New(s3.Options{BaseEndpoint: &endpoint, Region: region, UsePathStyle: !virtual, Credentials: envCredentials(),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired})
	rep := objgate.ProbeDetail(ctx, c, bucket, prefix)
	fmt.Fprintf(stdout, "probe %s bucket %s key %s\n", endpoint, bucket, rep.Key)
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
