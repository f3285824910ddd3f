package objgate

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/fencegate/fencegate/gate"
)

// This file holds the gate's calls to the store and the names of its
// objects.

// ErrTooLarge: an object the gate reads back is over its limit
// (ManifestBytesMax, BatchBytesMax, RecordBytesMax, DataBytesMax); nothing
// is decided on it.
var ErrTooLarge = errors.New("objgate: object over its size limit")

// Errors of one store call.
var (
	errNotFound = errors.New("objgate: no such object")
	errConflict = errors.New("objgate: precondition failed")
)

// classify maps a 412 (and S3's 409 ConditionalRequestConflict, a
// conditional write racing another) to errConflict and a 404 to
// errNotFound.
func classify(err error) error {
	var st interface{ HTTPStatusCode() int }
	if errors.As(err, &st) {
		switch st.HTTPStatusCode() {
		case 412, 409:
			return fmt.Errorf("%w: %w", errConflict, err)
		case 404:
			return fmt.Errorf("%w: %w", errNotFound, err)
		}
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "PreconditionFailed", "ConditionalRequestConflict":
			return fmt.Errorf("%w: %w", errConflict, err)
		case "NoSuchKey", "NotFound":
			return fmt.Errorf("%w: %w", errNotFound, err)
		}
	}
	return fmt.Errorf("objgate: %w", err)
}

// get reads a whole object of at most limit bytes and its ETag.
func (g *Gate) get(ctx context.Context, key string, limit int64) ([]byte, string, error) {
	out, err := g.api.GetObject(ctx, &s3.GetObjectInput{Bucket: &g.bucket, Key: &key})
	if err != nil {
		return nil, "", classify(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, limit+1))
	if err != nil {
		return nil, "", fmt.Errorf("objgate: read %s: %w", key, err)
	}
	if int64(len(b)) > limit {
		return nil, "", fmt.Errorf("%w: %s is larger than %d bytes", ErrTooLarge, key, limit)
	}
	return b, aws.ToString(out.ETag), nil
}

// put writes an object unconditionally (immutable keys: data, receipts,
// records, whose content is fixed by the key).
func (g *Gate) put(ctx context.Context, key string, body []byte) error {
	_, err := g.api.PutObject(ctx, &s3.PutObjectInput{Bucket: &g.bucket, Key: &key, Body: bytes.NewReader(body)})
	if err != nil {
		return classify(err)
	}
	return nil
}

// object is one listed object.
type object struct {
	key  string
	size int64
}

// list returns the objects under prefix in key order.
func (g *Gate) list(ctx context.Context, prefix string) ([]object, error) {
	var objs []object
	var token *string
	for {
		out, err := g.api.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &g.bucket, Prefix: &prefix, ContinuationToken: token})
		if err != nil {
			return nil, classify(err)
		}
		for _, o := range out.Contents {
			objs = append(objs, object{aws.ToString(o.Key), aws.ToInt64(o.Size)})
		}
		if !aws.ToBool(out.IsTruncated) {
			return objs, nil
		}
		token = out.NextContinuationToken
	}
}

func seqName(fence, seq uint64) string { return fmt.Sprintf("%020d-%020d", fence, seq) }

func (g *Gate) opPrefix(resource, operationID string) string {
	h := sha256.Sum256([]byte(operationID))
	return g.base(resource) + "ops/" + hex.EncodeToString(h[:16]) + "/"
}

// dataKey names the bytes one write attempt puts in an object of their
// own: by fence and segment (so that they list in write order), the
// version of the manifest the attempt would replace, and a random tag,
// so that no attempt ever overwrites another's object (and none pays for
// hashing megabytes to name them).
func (g *Gate) dataKey(resource string, m *gate.Mutation, version uint64) string {
	var tag [8]byte
	_, _ = rand.Read(tag[:])
	return fmt.Sprintf("%sdata/%s-%020d-%s", g.base(resource), seqName(m.FenceToken, m.SegmentSeq), version+1, hex.EncodeToString(tag[:]))
}
