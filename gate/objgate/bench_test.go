// This file measures a fenced write against a plain conditional PUT of
// the same bytes (If-Match the previous ETag) on the same store, op by op
// in one run, at three object sizes (1 KiB and 64 KiB inline in the
// manifest, 1 MiB in an object of its own), and reports the medians and
// their ratio, alternating which of the two goes first. Nothing is
// asserted.
package objgate_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/s3local"
)

func BenchmarkWritePaired(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("bytes-%d", size), func(b *testing.B) { benchPaired(b, size) })
	}
}

func benchPaired(b *testing.B, size int) {
	ctx := context.Background()
	c, bucket := s3local.NewBucket(b)
	iss := gatetest.NewIssuer("bench")
	g, err := objgate.Open(ctx, objgate.Config{Client: c, Bucket: bucket, Policy: gate.Policy{Verifier: iss.Verifier},
		Clock: fakeclock.New(iss.Now.Add(time.Second))})
	if err != nil {
		b.Fatal(err)
	}
	const r = "bench/one"
	base := iss.Mutation(gatetest.Writer{Resource: r, Owner: "worker-a", Lease: "l", OperationID: "op", Fence: 5}, 1, "")
	body := bytes.Repeat([]byte("x"), size)
	plainKey := "plain/one"
	etag := ""
	tp, tf := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		m := *base
		m.SegmentSeq, m.PayloadDigest = uint64(i+1), gatetest.Payload(fmt.Sprint(i))
		copy(body, fmt.Sprintf("%012d", i)) // new bytes each time, as a real write
		plain := func() {
			in := &s3.PutObjectInput{Bucket: &bucket, Key: &plainKey, Body: bytes.NewReader(body)}
			if etag == "" {
				in.IfNoneMatch = aws.String("*")
			} else {
				in.IfMatch = aws.String(etag)
			}
			out, err := c.PutObject(ctx, in)
			if err != nil {
				b.Fatal(err)
			}
			etag = aws.ToString(out.ETag)
		}
		fenced := func() {
			if _, err := g.Apply(ctx, "worker-a", &m, func(context.Context, objgate.Current) ([]byte, error) { return body, nil }); err != nil {
				b.Fatal(err)
			}
		}
		if i%2 == 0 { // alternate which goes first, so neither always follows the other
			tp, tf = append(tp, timed(plain)), append(tf, timed(fenced))
		} else {
			tf, tp = append(tf, timed(fenced)), append(tp, timed(plain))
		}
	}
	mp, mf := median(tp), median(tf)
	b.ReportMetric(float64(mp.Microseconds()), "plain-µs")
	b.ReportMetric(float64(mf.Microseconds()), "fenced-µs")
	b.ReportMetric(float64(mf)/float64(mp), "fenced/plain")
}

func timed(f func()) time.Duration {
	t0 := time.Now()
	f()
	return time.Since(t0)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
