package objgate

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/jsonappend"
	"github.com/fencegate/fencegate/gate/internal/stored"
)

// A resource's manifest is its one mutable object: what the conditional
// replace commits. Format 3 is one line naming the format, one line of
// JSON, then the inline business bytes:
//
//	fencegate-manifest 3
//	{"version":N,"tag":"…","state":{…},"receipts":[{…},…],"data":"KEY","inlineBytes":N}
//	<inlineBytes bytes>
//
// tag is 16 random hex digits drawn for each replace: a writer whose
// replace was answered 412 knows the manifest in place is its own (an SDK
// retry of a PUT that had committed) only by finding its tag, since two
// writers deciding alike on one manifest would write the same bytes
// otherwise. version rises by one with every replace, so no two manifests
// of a resource have the same bytes: an ETag (an MD5 of the bytes on most
// stores) is never reused, and a writer holding an old one cannot succeed
// against a manifest that went A → B → A. receipts are the last accepts
// not yet written out to receipt objects (at most ManifestReceiptsMax,
// oldest first, in gate's JSON form, short within a run: see
// manifest_receipts.go). The content is either inline (data "", the
// bytes after the JSON; at most InlineBytesMax) or the object data names
// (inlineBytes 0). The parser accepts exactly what the encoder writes.
// Formats 1 and 2, written before, are read and migrated: the next
// replace writes format 3 (manifest_legacy.go).

// Limits.
const (
	// InlineBytesMax: business bytes up to this size are kept in the
	// manifest, so the write is one conditional PUT; larger ones go to an
	// immutable object first.
	InlineBytesMax = 64 << 10
	// ManifestReceiptsMax bounds the receipts a manifest keeps; the accept
	// that finds it full first writes them out (one object, and an empty
	// one per operation among them), so one write in ManifestReceiptsMax
	// pays two more PUTs, in parallel, and a manifest's receipts stay
	// within a few KiB (about 130 bytes each in a lease's run of segments).
	ManifestReceiptsMax = 16
	// ManifestBytesMax bounds a manifest read back: the inline bytes and
	// a header of a state and ManifestReceiptsMax receipts (under 1 KiB
	// each in the whole form).
	ManifestBytesMax = InlineBytesMax + (ManifestReceiptsMax+4)<<10
)

const manifestMagic = "fencegate-manifest 3\n"

// held is a manifest as the gate holds it, with the ETag it was read or
// written with; an empty ETag is "no manifest yet" (the next write
// creates it).
type held struct {
	etag     string
	version  uint64
	tag      string // the replace's random tag ("" before the first)
	st       gate.FenceState
	receipts []heldReceipt // oldest first
	data     string        // key of the content when not inline
	inline   []byte        // the content when inline
}

// receiptAt returns the held receipt at (fence, seq), if any.
func (h held) receiptAt(fence, seq uint64) *gate.Receipt {
	for i := range h.receipts {
		if r := &h.receipts[i].r; r.FenceToken == fence && r.SegmentSeq == seq {
			return r
		}
	}
	return nil
}

func (g *Gate) newHeld(resource string, mode gate.Mode) held {
	return held{st: gate.FenceState{Resource: resource, Mode: mode}}
}

// encode writes h as format 3.
func (h held) encode() []byte {
	n := 512 + len(h.inline) + len(h.data)
	for _, r := range h.receipts {
		n += len(r.entry) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, manifestMagic...)
	b = append(b, `{"version":`...)
	b = strconv.AppendUint(b, h.version, 10)
	b = append(b, `,"tag":`...)
	b = jsonappend.String(b, h.tag)
	b = append(b, `,"state":`...)
	b = stored.AppendState(b, stored.FromState(h.st))
	b = append(b, `,"receipts":[`...)
	for i, r := range h.receipts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r.entry...)
	}
	b = append(b, `],"data":`...)
	b = jsonappend.String(b, h.data)
	b = append(b, `,"inlineBytes":`...)
	b = strconv.AppendInt(b, int64(len(h.inline)), 10)
	b = append(b, "}\n"...)
	return append(b, h.inline...)
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
	return g.readHeld(resource, b, etag)
}

// readHeld parses the manifest bytes b of resource, read with etag.
func (g *Gate) readHeld(resource string, b []byte, etag string) (held, error) {
	h, err := g.parseManifest(resource, b)
	if err != nil {
		return held{}, fmt.Errorf("objgate: manifest of %s: %w", resource, err)
	}
	h.etag = etag
	return h, nil
}

// replace writes next over h's manifest if it is still h's (If-Match),
// or creates it if there was none (If-None-Match: *), and returns next
// as held, with its version and ETag. An error matching errConflict means
// another writer committed first; it is a *lostRace carrying the
// manifest read back when that read succeeded.
func (g *Gate) replace(ctx context.Context, resource string, h, next held) (held, error) {
	g.dec.CheckStore(h.st, next.st)
	next.version, next.tag = h.version+1, newTag()
	body := next.encode()
	in := &s3.PutObjectInput{Bucket: &g.bucket, Key: aws.String(g.manifestKey(resource)), Body: bytes.NewReader(body)}
	switch {
	case g.noCompare:
	case h.etag == "":
		in.IfNoneMatch = aws.String("*")
	default:
		in.IfMatch = aws.String(h.etag)
	}
	out, err := g.api.PutObject(ctx, in)
	if err == nil {
		next.etag = aws.ToString(out.ETag)
		return next, nil
	}
	if err = classify(err); !errors.Is(err, errConflict) {
		return held{}, err
	}
	// A refused replace may be the SDK's retry of one that committed but
	// whose answer was lost: the retry then finds its own manifest in
	// place. body carries this replace's random tag, so equal bytes are
	// this replace and no other writer's. Otherwise what was read is the
	// manifest the next attempt decides on.
	b, etag, gerr := g.get(ctx, g.manifestKey(resource), ManifestBytesMax)
	if gerr != nil {
		return held{}, &lostRace{err: err}
	}
	if bytes.Equal(b, body) {
		next.etag = etag
		return next, nil
	}
	fresh, perr := g.readHeld(resource, b, etag)
	return held{}, &lostRace{err: err, fresh: fresh, read: perr == nil}
}

// lostRace is a replace refused because another writer committed first,
// with the manifest read right after when read is set.
type lostRace struct {
	err   error // matches errConflict
	fresh held
	read  bool
}

func (e *lostRace) Error() string { return e.err.Error() }
func (e *lostRace) Unwrap() error { return e.err }

// freshAfter returns the manifest a lost race read back, if any.
func freshAfter(err error) *held {
	var lr *lostRace
	if errors.As(err, &lr) && lr.read {
		return &lr.fresh
	}
	return nil
}

// tagDigits is the length of a manifest's tag: 8 random bytes in hex.
const tagDigits = 16

func newTag() string {
	var b [tagDigits / 2]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
