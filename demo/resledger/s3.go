package resledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencegate/fencegate/demo/ledger"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/grant"
)

// S3Store keeps the ledger in a bucket behind objgate (Gate nil:
// lease-only, one plain PUT per key under Prefix).
type S3Store struct {
	Client *s3.Client
	Bucket string
	Gate   *objgate.Gate
	Prefix string // lease-only values
}

// content is a resource's business bytes: its entries by key.
type content map[string]ledger.Value

// Describe names the store.
func (s *S3Store) Describe() string {
	if s.Gate == nil {
		return "S3 bucket " + s.Bucket + ", LEASE-ONLY (negative control: no gate)"
	}
	return "S3 bucket " + s.Bucket + ", fenced (gate/objgate, conditional manifest replace)"
}

// Write merges entries into the resource's content and lets the gate
// commit it.
func (s *S3Store) Write(ctx context.Context, caller string, m *gate.Mutation, entries []ledger.Entry) (gate.Receipt, error) {
	if s.Gate == nil {
		for _, e := range entries {
			b, _ := json.Marshal(ledger.Value{Key: e.Key, Value: e.Value, Writer: caller})
			key := s.Prefix + url.PathEscape(e.Key)
			if _, err := s.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.Bucket, Key: &key, Body: bytes.NewReader(b)}); err != nil {
				return gate.Receipt{}, err
			}
		}
		return gate.Receipt{}, nil
	}
	return s.Gate.Apply(ctx, caller, m, func(ctx context.Context, cur objgate.Current) ([]byte, error) {
		c, err := decodeContent(ctx, cur)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			c[e.Key] = ledger.Value{Key: e.Key, Value: e.Value, Writer: caller, Fence: m.FenceToken}
		}
		return json.Marshal(c)
	})
}

func decodeContent(ctx context.Context, cur objgate.Current) (content, error) {
	b, err := cur.Bytes(ctx)
	if err != nil {
		return nil, err
	}
	c := content{}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("resledger: resource content: %w", err)
		}
	}
	return c, nil
}

// QueryOperation is the gate's receipt query.
func (s *S3Store) QueryOperation(ctx context.Context, resource, op string, fence uint64) (gate.Answer, error) {
	return s.Gate.QueryOperation(ctx, resource, op, fence)
}

// Value finds key in the content of the longest resource that prefixes
// it (or, lease-only, in its own object).
func (s *S3Store) Value(ctx context.Context, key string) (ledger.Value, bool, error) {
	if s.Gate == nil {
		return s.leaseOnlyValue(ctx, key)
	}
	for r := key; r != ""; r = parent(r) {
		if grant.ValidateResource(r) != nil {
			continue
		}
		b, err := s.Gate.Read(ctx, r)
		if err != nil {
			return ledger.Value{}, false, err
		}
		c := content{}
		if len(b) > 0 {
			if err := json.Unmarshal(b, &c); err != nil {
				return ledger.Value{}, false, fmt.Errorf("resledger: content of %s: %w", r, err)
			}
		}
		if v, ok := c[key]; ok {
			return v, true, nil
		}
	}
	return ledger.Value{Key: key}, false, nil
}

func parent(r string) string {
	i := strings.LastIndexByte(r, '/')
	if i < 0 {
		return ""
	}
	return r[:i]
}

func (s *S3Store) leaseOnlyValue(ctx context.Context, key string) (ledger.Value, bool, error) {
	k := s.Prefix + url.PathEscape(key)
	out, err := s.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.Bucket, Key: &k})
	if err != nil {
		var st interface{ HTTPStatusCode() int }
		if errors.As(err, &st) && st.HTTPStatusCode() == 404 {
			return ledger.Value{Key: key}, false, nil
		}
		return ledger.Value{}, false, err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, 1<<20))
	if err != nil {
		return ledger.Value{}, false, err
	}
	var v ledger.Value
	return v, true, json.Unmarshal(b, &v)
}
