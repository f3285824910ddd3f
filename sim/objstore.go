package sim

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// objStore is the object mode's storage: one bucket in memory behind the
// part of the S3 API gate/objgate calls (objgate.API), with the
// semantics objgate relies on and Probe checks — strong read-after-write
// consistency, a new ETag for every PUT, If-None-Match: * refused when
// the key exists and If-Match refused unless it names the current ETag
// (412, as AWS S3 answers), keys listed in byte order. It is a storage
// replacement, as the SQL mode's in-memory SQLite is: it holds no gate
// rule. objgate writes a receipt batch's objects in parallel, hence the
// mutex.
type objStore struct {
	mu     sync.Mutex
	objs   map[string]storedObject
	puts   uint64 // ETags are "<n>", n the PUT's number
	faults *storeFaults
}

// storeFaults makes the bucket fail as a real one does (Config.StoreFaults):
// a receipt batch's PUT fails before it lands; a manifest PUT that
// changes the content (an accept) lands and its answer is lost, which the
// SDK's retry of it sees as 412 or the caller as an error. Each draw is a
// function of the round's seed, the key and how often that key was put,
// so the parallel PUTs of a batch draw alike in any order.
type storeFaults struct {
	seed  uint64
	tries map[string]uint64
	// Faults, counted for the report.
	batchFailed, lost412, lostError int
}

// Store fault rates.
const (
	batchFailShare = 0.3  // of receipt batch PUTs
	lostPutShare   = 0.15 // of content-changing manifest PUTs; half answered 412, half an error
)

// errStoreUnavailable is the store failing a request (a 503).
var errStoreUnavailable = &s3Error{503, "ServiceUnavailable"}

// draw returns a uniform value in [0, 1) for this PUT of key.
func (f *storeFaults) draw(key string) float64 {
	f.tries[key]++
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s\x00%d", f.seed, key, f.tries[key])
	return float64(mix64(h.Sum64())>>11) / (1 << 53)
}

// mix64 is SplitMix64's finalizer: FNV-1a alone leaves the high bits of
// two keys differing in their last byte nearly equal.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// content is a manifest's business bytes: what follows its two header
// lines (the simulator's contents are always inline).
func content(manifest []byte) []byte {
	if i := bytes.IndexByte(manifest, '\n'); i >= 0 {
		if j := bytes.IndexByte(manifest[i+1:], '\n'); j >= 0 {
			return manifest[i+1+j+1:]
		}
	}
	return nil
}

type storedObject struct {
	body []byte
	etag string
}

// newObjStore returns an empty bucket; with faults, one that fails (a
// storeFaults drawing from seed).
func newObjStore(faults bool, seed uint64) *objStore {
	s := &objStore{objs: map[string]storedObject{}}
	if faults {
		s.faults = &storeFaults{seed: seed, tries: map[string]uint64{}}
	}
	return s
}

// s3Error is a store refusal as the SDK reports one: classify in objgate
// reads its HTTP status and error code.
type s3Error struct {
	status int
	code   string
}

func (e *s3Error) Error() string        { return fmt.Sprintf("sim store: %d %s", e.status, e.code) }
func (e *s3Error) HTTPStatusCode() int  { return e.status }
func (e *s3Error) ErrorCode() string    { return e.code }
func (e *s3Error) ErrorMessage() string { return e.code }
func (e *s3Error) ErrorFault() int      { return 1 } // smithy.FaultClient

var (
	errPrecondition = &s3Error{412, "PreconditionFailed"}
	errNoSuchKey    = &s3Error{404, "NoSuchKey"}
)

func (s *objStore) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := aws.ToString(in.Key)
	cur, exists := s.objs[key]
	switch {
	case aws.ToString(in.IfNoneMatch) == "*" && exists:
		return nil, errPrecondition
	case in.IfMatch != nil && (!exists || aws.ToString(in.IfMatch) != cur.etag):
		return nil, errPrecondition
	}
	var body []byte
	if in.Body != nil {
		var err error
		if body, err = io.ReadAll(in.Body); err != nil {
			return nil, err
		}
	}
	f := s.faults
	if f != nil && strings.Contains(key, "/receipts/") && f.draw(key) < batchFailShare {
		f.batchFailed++
		return nil, errStoreUnavailable
	}
	s.puts++
	o := storedObject{body: body, etag: fmt.Sprintf("%q", fmt.Sprint(s.puts))}
	s.objs[key] = o
	if f != nil && strings.HasSuffix(key, "/manifest") && exists && !bytes.Equal(content(cur.body), content(body)) {
		if d := f.draw(key); d < lostPutShare/2 {
			f.lost412++
			return nil, errPrecondition // the SDK's retry of the PUT that landed
		} else if d < lostPutShare {
			f.lostError++
			return nil, errStoreUnavailable
		}
	}
	return &s3.PutObjectOutput{ETag: aws.String(o.etag)}, nil
}

func (s *objStore) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objs[aws.ToString(in.Key)]
	if !ok {
		return nil, errNoSuchKey
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(o.body)), ETag: aws.String(o.etag),
		ContentLength: aws.Int64(int64(len(o.body)))}, nil
}

// listPageMax is a page of ListObjectsV2 when MaxKeys is not given, as
// S3's 1,000.
const listPageMax = 1000

func (s *objStore) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prefix, after := aws.ToString(in.Prefix), aws.ToString(in.StartAfter)
	if t := aws.ToString(in.ContinuationToken); t > after {
		after = t
	}
	page := int(aws.ToInt32(in.MaxKeys))
	if page <= 0 || page > listPageMax {
		page = listPageMax
	}
	var keys []string
	for k := range s.objs {
		if strings.HasPrefix(k, prefix) && k > after {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := &s3.ListObjectsV2Output{IsTruncated: aws.Bool(len(keys) > page)}
	if len(keys) > page {
		keys = keys[:page]
		out.NextContinuationToken = aws.String(keys[page-1])
	}
	for _, k := range keys {
		out.Contents = append(out.Contents, types.Object{Key: aws.String(k), Size: aws.Int64(int64(len(s.objs[k].body))),
			ETag: aws.String(s.objs[k].etag)})
	}
	out.KeyCount = aws.Int32(int32(len(out.Contents)))
	return out, nil
}

func (s *objStore) DeleteObject(_ context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objs, aws.ToString(in.Key))
	return &s3.DeleteObjectOutput{}, nil
}
