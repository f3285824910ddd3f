package objgate

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencegate/fencegate/gate/internal/stored"
)

// This file is the gate's bounded listings, for a reporter
// (gate/report/objreport): the resource names a page at a time, and a
// resource's record keys a page at a time, each page one ListObjectsV2
// call, so that a report never reads every record (Records does).

// ListPageMax bounds one listing page, 1000 keys: S3's own page size.
const ListPageMax = 1000

// ResourceNames returns up to limit (1..ListPageMax) names of the
// resources with objects under the gate's prefix, from one
// ListObjectsV2 call with a delimiter, in the order of their path-escaped
// keys, starting after the cursor after ("" from the first); next is the
// cursor of the page after, "" when this one was the last. A name that is
// not a valid resource is skipped. While Open or `fencegate probe s3`
// checks the store, its probe object shows as a resource named "probe".
func (g *Gate) ResourceNames(ctx context.Context, after string, limit int) (names []string, next string, err error) {
	in := &s3.ListObjectsV2Input{Bucket: &g.bucket, Prefix: &g.prefix, Delimiter: aws.String("/"),
		MaxKeys: aws.Int32(int32(min(max(limit, 1), ListPageMax)))}
	if after != "" {
		in.StartAfter = &after
	}
	out, err := g.api.ListObjectsV2(ctx, in)
	if err != nil {
		return nil, "", classify(err)
	}
	for _, p := range out.CommonPrefixes {
		dir := aws.ToString(p.Prefix) // prefix + escaped name + "/"
		// A cursor past every key under dir: "0" sorts right after "/".
		next = strings.TrimSuffix(dir, "/") + "0"
		name, err := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(dir, g.prefix), "/"))
		if err == nil && checkResource(name) == nil && g.base(name) == dir {
			names = append(names, name)
		}
	}
	if !aws.ToBool(out.IsTruncated) {
		next = ""
	}
	return names, next, nil
}

// RecordKeys returns up to limit (1..ListPageMax) keys of resource's
// records of kind ("alarm", "quarantine", "shadow" or "action"), oldest
// first by the gate's clock, after the key after ("" from the first),
// from one ListObjectsV2 call, and whether more follow. RecordAt reads
// one.
func (g *Gate) RecordKeys(ctx context.Context, kind, resource, after string, limit int) (keys []string, more bool, err error) {
	if err := checkResource(resource); err != nil {
		return nil, false, err
	}
	switch kind {
	case stored.RecordAlarm, stored.RecordQuarantine, stored.RecordShadow, stored.RecordAction:
	default:
		return nil, false, fmt.Errorf("objgate: unknown record kind %q", kind)
	}
	in := &s3.ListObjectsV2Input{Bucket: &g.bucket, Prefix: aws.String(g.base(resource) + "records/" + kind + "/"),
		MaxKeys: aws.Int32(int32(min(max(limit, 1), ListPageMax)))}
	if after != "" {
		in.StartAfter = &after
	}
	out, err := g.api.ListObjectsV2(ctx, in)
	if err != nil {
		return nil, false, classify(err)
	}
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys, aws.ToBool(out.IsTruncated), nil
}

// RecordAt reads the record at key, a key RecordKeys returned: one GET
// of at most RecordBytesMax.
func (g *Gate) RecordAt(ctx context.Context, key string) (Record, error) {
	var r Record
	if !strings.HasPrefix(key, g.prefix) || !strings.Contains(key, "/records/") {
		return r, fmt.Errorf("objgate: %q is not a record of this gate", key)
	}
	b, _, err := g.get(ctx, key, RecordBytesMax)
	if err != nil {
		return r, err
	}
	if err := stored.Decode(b, &r); err != nil {
		return r, fmt.Errorf("objgate: %s: %w", strings.TrimPrefix(key, g.prefix), err)
	}
	return r, nil
}
