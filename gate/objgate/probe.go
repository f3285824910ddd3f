package objgate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// ProbeStep is one check of Probe, in order.
type ProbeStep struct {
	Name string // what was tried
	Want string // "200" or "412"
	Got  string // what the store answered
}

// ProbeReport is what Probe saw; Err is nil when the store passed.
type ProbeReport struct {
	Key   string
	Steps []ProbeStep
	Err   error
}

// Probe proves, on a fresh key under prefix in bucket, that the store
// honours conditional writes: it creates the key with If-None-Match: *
// (must succeed), creates it again (must be refused with 412), replaces
// it with If-Match: <its ETag> (must succeed), replaces it with the
// now-stale ETag (412) and with a made-up ETag (412), then deletes the
// key. A store that ignores the headers fails with ErrNoConditionalWrites;
// an unreachable store or bucket fails with its own error.
func Probe(ctx context.Context, api API, bucket, prefix string) error {
	return ProbeDetail(ctx, api, bucket, prefix).Err
}

// ProbeDetail is Probe with every step's answer.
func ProbeDetail(ctx context.Context, api API, bucket, prefix string) ProbeReport {
	var tag [8]byte
	_, _ = rand.Read(tag[:])
	rep := ProbeReport{Key: prefix + "probe/" + hex.EncodeToString(tag[:])}
	p := prober{ctx: ctx, api: api, bucket: bucket, key: rep.Key, rep: &rep}
	defer api.DeleteObject(context.WithoutCancel(ctx), &s3.DeleteObjectInput{Bucket: &bucket, Key: &rep.Key})
	first, ok := p.step("create with If-None-Match: *", "200", "", "*", "v1")
	if !ok {
		return rep
	}
	if _, ok = p.step("create again with If-None-Match: *", "412", "", "*", "v2"); !ok {
		return rep
	}
	second, ok := p.step("replace with If-Match: current ETag", "200", first, "", "v3")
	if !ok {
		return rep
	}
	if first == second {
		rep.Err = fmt.Errorf("objgate: probe %s: the store gave two different contents the same ETag %s", rep.Key, first)
		return rep
	}
	if _, ok = p.step("replace with If-Match: stale ETag", "412", first, "", "v4"); !ok {
		return rep
	}
	p.step("replace with If-Match: made-up ETag", "412", `"00000000000000000000000000000000"`, "", "v5")
	return rep
}

type prober struct {
	ctx         context.Context
	api         API
	bucket, key string
	rep         *ProbeReport
}

// step puts body with the given conditions and checks the answer; it
// returns the new ETag and whether to go on.
func (p *prober) step(name, want, ifMatch, ifNoneMatch, body string) (string, bool) {
	in := &s3.PutObjectInput{Bucket: &p.bucket, Key: &p.key, Body: strings.NewReader(body)}
	if ifMatch != "" {
		in.IfMatch = aws.String(ifMatch)
	}
	if ifNoneMatch != "" {
		in.IfNoneMatch = aws.String(ifNoneMatch)
	}
	out, err := p.api.PutObject(p.ctx, in)
	got := "200"
	switch {
	case errors.Is(classify(err), errConflict):
		got = "412"
	case err != nil:
		p.rep.Steps = append(p.rep.Steps, ProbeStep{name, want, err.Error()})
		p.rep.Err = fmt.Errorf("objgate: probe %s/%s: %s: %w", p.bucket, p.key, name, err)
		return "", false
	}
	p.rep.Steps = append(p.rep.Steps, ProbeStep{name, want, got})
	if got != want {
		p.rep.Err = fmt.Errorf("%w: probe %s/%s: %s answered %s, want %s", ErrNoConditionalWrites, p.bucket, p.key, name, got, want)
		return "", false
	}
	if out == nil {
		return "", true
	}
	return aws.ToString(out.ETag), true
}
