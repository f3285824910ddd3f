// Package objgate runs the gate decision for a resource kept in an
// object store over the S3 API (any S3-compatible store that honours
// conditional writes). State, receipts and small contents live in the
// resource's manifest, and atomicity comes from one conditional write of
// it, as Delta Lake and SlateDB commit: the manifest — the whole
// gate.FenceState, the last receipts, and the business bytes themselves up to
// InlineBytesMax (else the key of a new immutable object holding them,
// written first) — is replaced with If-Match: <its ETag> (created with
// If-None-Match: *). A 412 means another writer committed first: read the
// manifest again and decide again. Readers follow the manifest (Read).
//
// # Use
//
//	g, err := objgate.Open(ctx, objgate.Config{Client: s3Client, Bucket: "ledger", Policy: gate.Policy{Verifier: v}})
//	rcpt, err := g.Apply(ctx, caller, m, func(ctx context.Context, cur objgate.Current) ([]byte, error) {
//		return newBytes, nil // the resource's next content; cur.Bytes(ctx) reads the current one
//	})
//	body, err := g.Read(ctx, resource)
//
// # Conditional writes are the whole safety
//
// Many S3-compatible stores accept If-Match and If-None-Match on
// PutObject and ignore them. On such a store two writers can both
// "replace" the manifest and the later one silently wins: fencing is
// gone. Open runs Probe against the bucket (a duplicate create and a
// stale replace must both be refused with 412) and refuses enforce mode
// on a store that fails it (ErrNoConditionalWrites): such a gate can only
// run resources in shadow mode. `fencegate probe s3` runs the same check.
//
// # Decisions and the manifest cache
//
// Apply authenticates (gate.Policy.Authenticate), takes the manifest —
// the one it committed last, if it holds it (up to CachedManifestsMax
// resources), else a fresh GET — and decides with
// adapt.Decider.DecideLocked on its state. What the decision writes is
// committed by the conditional replace, which fails unless the manifest
// is still the one decided on. A rejection that writes nothing decided on
// a held manifest is decided again on a fresh one before it is answered,
// so a stale copy never rejects. A warm small write is one PUT.
//
// # Objects
//
// Under Config.Prefix and the path-escaped resource: manifest (its format
// is in manifest.go; formats 1 and 2 are read and migrated); data/…
// (immutable business bytes too large to inline, one object per write
// attempt; objects no manifest points to are garbage a lifecycle rule
// may remove); receipts/ and ops/<sha256(operation ID)>/ (the receipts a
// full manifest let go, in batches, written before the manifest that
// drops them, so a receipt is in the manifest or an object; never
// updated or deleted); records/<kind>/ (alarms, quarantine, shadow log,
// operator actions). A record is written after the decision that asks
// for it is committed; a crash in between loses the record, never the
// pause (which is in the manifest's state).
package objgate

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/gate/internal/adapter"
	"github.com/fencegate/fencegate/gate/internal/stored"
)

// Defaults.
const (
	// PrefixDefault starts every object key when Config.Prefix is empty.
	PrefixDefault = "fencegate/"
	// RetriesMaxDefault bounds one Apply's read–decide–replace attempts
	// when Config.RetriesMax is zero.
	RetriesMaxDefault = 32
	// CachedManifestsMax bounds the manifests a Gate holds (its own last
	// commits, each up to InlineBytesMax of content); past it the cache is
	// cleared.
	CachedManifestsMax = 4096
)

// API is the part of the S3 client the gate uses; *s3.Client has it.
type API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

// Config configures a Gate.
type Config struct {
	// Client reaches the store. Required.
	Client API
	// Bucket holds the resources. Required; it must exist.
	Bucket string
	// Prefix starts every key. Optional, defaults to PrefixDefault.
	Prefix string
	// Policy holds the trust bundle verifier, allowed operation classes
	// and status skew bound. Required (Policy.Verifier at least).
	Policy gate.Policy
	// Querier, if set, is the registry's linearizable status query.
	// Optional.
	Querier gate.StatusQuerier
	// StatusQueryTimeout bounds one Querier call. Optional, defaults to
	// adapt.QueryTimeoutDefault.
	StatusQueryTimeout time.Duration
	// Clock is the gate's clock. Optional, defaults to the system clock.
	Clock clock.Clock
	// DefaultMode is the mode of a resource seen for the first time.
	// Optional, defaults to gate.ModeEnforce, which Open refuses on a
	// store that fails Probe.
	DefaultMode gate.Mode
	// RetriesMax bounds one Apply's attempts. Optional, defaults to
	// RetriesMaxDefault.
	RetriesMax int
	// ReceiptsHeld is how many receipts a manifest this gate writes holds
	// before the accept that finds it full writes them out as a batch:
	// fewer make the manifest smaller and batches more frequent. Optional,
	// 1..ManifestReceiptsMax, defaults to ManifestReceiptsMax. Gates on
	// one bucket may differ.
	ReceiptsHeld int
}

// Gate applies fenced mutations to objects. It is safe for concurrent
// use; the manifests it holds are only a shortcut, checked by every
// conditional write.
type Gate struct {
	api     API
	bucket  string
	prefix  string
	dec     adapt.Decider
	clock   clock.Clock
	mode    gate.Mode
	retries int
	held    int // Config.ReceiptsHeld
	// probeErr is why the store failed Probe (nil: it honours
	// conditional writes); enforce mode is refused while it is set.
	probeErr  error
	counters  gate.Counters
	noCompare bool // tests only: the negative control's mutant, replacing without If-Match
	trustHeld bool // tests only: the negative control's mutant, answering rejections from the held manifest
	mu        sync.Mutex
	cache     map[string]held
	records   uint64 // sequence of record keys written by this Gate (under mu)
}

// Errors.
var (
	// ErrNoConditionalWrites: the store does not refuse stale or
	// duplicate conditional writes, so it cannot fence; enforce mode is
	// refused.
	ErrNoConditionalWrites = errors.New("objgate: the object store ignores conditional writes (If-Match / If-None-Match); it cannot fence writes, enforce mode refused")
	// ErrBusiness wraps the business function's error: nothing was
	// committed.
	ErrBusiness = errors.New("objgate: business change failed")
	// ErrContended: RetriesMax attempts all lost the race for the
	// manifest. Nothing was committed; the caller may retry.
	ErrContended = errors.New("objgate: manifest kept changing; gave up")
)

// Open checks cfg, probes the bucket's conditional writes and returns a
// Gate. On a store that fails the probe it returns an error wrapping
// ErrNoConditionalWrites unless DefaultMode is shadow; such a gate
// refuses SetMode(enforce) and every resource stored in enforce mode.
func Open(ctx context.Context, cfg Config) (*Gate, error) { return open(ctx, cfg, true) }

func open(ctx context.Context, cfg Config, probe bool) (*Gate, error) {
	if cfg.Client == nil || cfg.Bucket == "" {
		return nil, errors.New("objgate: Config.Client and Config.Bucket are required")
	}
	b, err := adapter.Common{Policy: cfg.Policy, Querier: cfg.Querier, StatusQueryTimeout: cfg.StatusQueryTimeout,
		Clock: cfg.Clock, DefaultMode: cfg.DefaultMode}.Resolve()
	if err != nil {
		return nil, err
	}
	g := &Gate{api: cfg.Client, bucket: cfg.Bucket, prefix: cfg.Prefix, dec: b.Decider, clock: b.Clock,
		mode: b.Mode, retries: cfg.RetriesMax, cache: map[string]held{}}
	if g.prefix == "" {
		g.prefix = PrefixDefault
	}
	if g.retries <= 0 {
		g.retries = RetriesMaxDefault
	}
	switch g.held = cfg.ReceiptsHeld; {
	case g.held == 0:
		g.held = ManifestReceiptsMax
	case g.held < 0 || g.held > ManifestReceiptsMax:
		return nil, fmt.Errorf("objgate: Config.ReceiptsHeld %d, want 1..%d", cfg.ReceiptsHeld, ManifestReceiptsMax)
	}
	if !probe {
		return g, nil
	}
	if err := Probe(ctx, cfg.Client, cfg.Bucket, g.prefix); err != nil {
		if !errors.Is(err, ErrNoConditionalWrites) || g.mode == gate.ModeEnforce {
			return nil, err
		}
		g.probeErr = err
	}
	return g, nil
}

// Counters returns the per-outcome decision counters.
func (g *Gate) Counters() *gate.Counters { return &g.counters }

// Conditional reports nil if the store passed Probe at Open, else why not.
func (g *Gate) Conditional() error { return g.probeErr }

// Record is one alarm, quarantine, shadow-log or operator-action entry.
type Record = stored.Record

// base is the key prefix of one resource's objects.
func (g *Gate) base(resource string) string { return g.prefix + url.PathEscape(resource) + "/" }

func (g *Gate) manifestKey(resource string) string { return g.base(resource) + "manifest" }

func (g *Gate) refuseEnforce(resource string) error {
	if g.probeErr == nil {
		return nil
	}
	return fmt.Errorf("%w: resource %s is in enforce mode: %v", ErrNoConditionalWrites, resource, g.probeErr)
}
