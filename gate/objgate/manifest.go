package objgate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
)

// manifest is a resource's one mutable object: what the conditional
// replace commits.
type manifest struct {
	// Version rises by one with every replace, so no two manifests of a
	// resource have the same bytes: an ETag (an MD5 of the bytes on most
	// stores) is never reused, and a writer holding an old one cannot
	// succeed against a manifest that went A → B → A.
	Version uint64          `json:"version"`
	State   stored.State    `json:"state"`
	Last    *stored.Receipt `json:"lastReceipt,omitempty"` // the receipt of the last accept
	Data    string          `json:"data,omitempty"`        // key of the current business bytes
}

// held is a manifest with the ETag it was read or written with; an empty
// ETag is "no manifest yet" (the next write creates it).
type held struct {
	etag string
	m    manifest
	st   gate.State
	last *gate.Receipt
}

// ManifestBytesMax bounds a manifest read back (a real one is about 1 KiB).
const ManifestBytesMax = 64 << 10

func (g *Gate) newHeld(resource string, mode gate.Mode) held {
	st := gate.State{Resource: resource, Mode: mode}
	return held{m: manifest{State: stored.FromState(st)}, st: st}
}

// fetch reads the manifest of resource from the store.
func (g *Gate) fetch(ctx context.Context, resource string) (held, error) {
	b, etag, err := g.get(ctx, g.manifestKey(resource), ManifestBytesMax)
	if errors.Is(err, errNotFound) {
		return g.newHeld(resource, g.mode), nil
	}
	if err != nil {
		return held{}, err
	}
	h := held{etag: etag}
	if err := stored.Decode(b, &h.m); err != nil {
		return held{}, err
	}
	if h.st, err = h.m.State.GateState(); err != nil {
		return held{}, err
	}
	if h.st.Resource != resource {
		return held{}, fmt.Errorf("objgate: manifest of %s holds the state of %s", resource, h.st.Resource)
	}
	if h.m.Last != nil {
		r, err := h.m.Last.GateReceipt()
		if err != nil {
			return held{}, err
		}
		h.last = &r
	}
	return h, nil
}

// replace writes next over h's manifest if it is still h's (If-Match),
// or creates it if there was none (If-None-Match: *). errConflict means
// another writer committed first.
func (g *Gate) replace(ctx context.Context, resource string, h held, next manifest) (string, error) {
	next.Version = h.m.Version + 1
	in := &s3.PutObjectInput{Bucket: &g.bucket, Key: aws.String(g.manifestKey(resource)),
		Body: bytes.NewReader(stored.Encode(next)), ContentType: aws.String("application/json")}
	if h.etag == "" {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(h.etag)
	}
	out, err := g.api.PutObject(ctx, in)
	if err != nil {
		return "", classify(err)
	}
	return aws.ToString(out.ETag), nil
}

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
		return nil, "", fmt.Errorf("objgate: %s is larger than %d bytes", key, limit)
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

// list returns the keys under prefix in key order.
func (g *Gate) list(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	var token *string
	for {
		out, err := g.api.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &g.bucket, Prefix: &prefix, ContinuationToken: token})
		if err != nil {
			return nil, classify(err)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		if !aws.ToBool(out.IsTruncated) {
			return keys, nil
		}
		token = out.NextContinuationToken
	}
}

func seqName(fence, seq uint64) string { return fmt.Sprintf("%020d-%020d", fence, seq) }

func (g *Gate) receiptKey(resource string, fence, seq uint64) string {
	return g.base(resource) + "receipts/" + seqName(fence, seq)
}

func (g *Gate) opPrefix(resource, operationID string) string {
	h := sha256.Sum256([]byte(operationID))
	return g.base(resource) + "ops/" + hex.EncodeToString(h[:16]) + "/"
}

// dataKey names the bytes one attempt writes: fixed by fence, segment
// and content, so a retry rewrites the same object with the same bytes.
func (g *Gate) dataKey(resource string, m *gate.Mutation, body []byte) string {
	h := sha256.Sum256(body)
	return g.base(resource) + "data/" + seqName(m.FenceToken, m.SegmentSeq) + "-" + hex.EncodeToString(h[:])
}
