package etcdstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// EmbeddedStartTimeoutMs bounds how long StartEmbedded waits for the member
// to become ready when ctx has no earlier deadline.
const EmbeddedStartTimeoutMs = 60_000

// EmbeddedOptions tunes StartEmbedded. The zero value is the production
// default: fsync on, loopback ports picked by the kernel, logs dropped.
type EmbeddedOptions struct {
	// Name is the member name. Optional, defaults to "fencegate".
	Name string
	// ClientURL is where clients connect. Optional, defaults to
	// "http://127.0.0.1:0": a free loopback port the kernel picks, so tests
	// in parallel packages never collide. Endpoints reports the real one.
	ClientURL string
	// PeerURL is the (unused, single-member) peer listener. Optional,
	// defaults to "http://127.0.0.1:0".
	PeerURL string
	// Logger receives etcd's logs. Optional, defaults to zap.NewNop().
	Logger *zap.Logger
	// UnsafeNoFsync turns fsync off: for tests only, a crash loses data.
	UnsafeNoFsync bool
	// QuotaBytes is the member's space quota (etcd's
	// --quota-backend-bytes): past it etcd raises NOSPACE and takes reads
	// and deletes only. Optional, defaults to EmbeddedQuotaBytesDefault.
	QuotaBytes int64
	// CompactionRetention is how much history the member keeps: it
	// compacts every tenth of it to drop what is older (etcd's periodic
	// auto-compaction). Optional, defaults to
	// EmbeddedCompactionRetentionDefault.
	CompactionRetention time.Duration
}

// Defaults of the embedded member's space (docs/operations.md, "The
// store's size").
const (
	// EmbeddedQuotaBytesDefault is 8 GiB, etcd's documented largest
	// recommended quota: a registry at full throughput keeps its request
	// retention (16 min of finished cycles, about 400 bytes each in etcd)
	// and a minute of history well under it, and the quota is a ceiling,
	// not an allocation.
	EmbeddedQuotaBytesDefault = 8 << 30
	// EmbeddedCompactionRetentionDefault is 1 min of history, compacted
	// every 6 s: watches resume from revisions seconds old (a watch from
	// a compacted one falls back to reads), and each write's old
	// revisions are free for reuse a minute later, so the file stays
	// flat under a steady load.
	EmbeddedCompactionRetentionDefault = time.Minute
)

// Ranges of EmbeddedOptions. A quota under 1 MiB leaves etcd no room for
// its own metadata; above 8 GiB etcd warns that it is past its tested
// size. History kept under a second has the compactor run every 100 ms
// and drop revisions a watch is still catching up from; over a day of
// it, a busy registry's file grows with a day of overwritten records.
const (
	EmbeddedQuotaBytesMin          = 1 << 20
	EmbeddedQuotaBytesMax          = 8 << 30
	EmbeddedCompactionRetentionMin = time.Second
	EmbeddedCompactionRetentionMax = 24 * time.Hour
)

// Embedded is a running single-member etcd inside this process.
type Embedded struct {
	etcd      *embed.Etcd
	endpoints []string
	calls     callGate // InProcess's calls (inprocess.go)
}

// StartEmbedded starts (or restarts, keeping everything in dataDir) a
// single-member etcd and waits until it serves. Close stops it.
func StartEmbedded(ctx context.Context, dataDir string, opt EmbeddedOptions) (*Embedded, error) {
	cfg, err := embedConfig(dataDir, opt)
	if err != nil {
		return nil, err
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: start embedded etcd: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, EmbeddedStartTimeoutMs*time.Millisecond)
	defer cancel()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcdstore: embedded etcd failed: %w", err)
	case <-ctx.Done():
		e.Close()
		return nil, fmt.Errorf("etcdstore: embedded etcd not ready: %w", ctx.Err())
	}
	em := &Embedded{etcd: e}
	for _, l := range e.Clients {
		em.endpoints = append(em.endpoints, l.Addr().String())
	}
	if len(em.endpoints) == 0 {
		e.Close()
		return nil, errors.New("etcdstore: embedded etcd has no client listener")
	}
	return em, nil
}

func embedConfig(dataDir string, opt EmbeddedOptions) (*embed.Config, error) {
	if dataDir == "" {
		return nil, errors.New("etcdstore: embedded etcd needs a data directory")
	}
	if q := opt.QuotaBytes; q != 0 && (q < EmbeddedQuotaBytesMin || q > EmbeddedQuotaBytesMax) {
		return nil, fmt.Errorf("etcdstore: embedded etcd quota %d bytes: want %d (1 MiB) to %d (8 GiB), or 0 for the default", q, EmbeddedQuotaBytesMin, EmbeddedQuotaBytesMax)
	}
	if r := opt.CompactionRetention; r != 0 && (r < EmbeddedCompactionRetentionMin || r > EmbeddedCompactionRetentionMax) {
		return nil, fmt.Errorf("etcdstore: embedded etcd compaction retention %v: want %v to %v, or 0 for the default", r, EmbeddedCompactionRetentionMin, EmbeddedCompactionRetentionMax)
	}
	def := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	def(&opt.Name, "fencegate")
	def(&opt.ClientURL, "http://127.0.0.1:0")
	def(&opt.PeerURL, "http://127.0.0.1:0")
	if opt.Logger == nil {
		opt.Logger = zap.NewNop()
	}
	curl, err := url.Parse(opt.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: client URL: %w", err)
	}
	purl, err := url.Parse(opt.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: peer URL: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = opt.Name
	cfg.Dir = dataDir
	cfg.ListenClientUrls = []url.URL{*curl}
	cfg.AdvertiseClientUrls = []url.URL{*curl}
	cfg.ListenPeerUrls = []url.URL{*purl}
	cfg.AdvertisePeerUrls = []url.URL{*purl}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(opt.Logger)
	cfg.UnsafeNoFsync = opt.UnsafeNoFsync
	cfg.QuotaBackendBytes = cmp.Or(opt.QuotaBytes, EmbeddedQuotaBytesDefault)
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = cmp.Or(opt.CompactionRetention, EmbeddedCompactionRetentionDefault).String()
	return cfg, nil
}

// Endpoints returns the client endpoints (host:port).
func (e *Embedded) Endpoints() []string { return append([]string(nil), e.endpoints...) }

// Client returns a new client of the embedded member; the caller closes it.
func (e *Embedded) Client() (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   e.endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: dialOptions(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcdstore: client: %w", err)
	}
	return c, nil
}

// Close stops the member; everything committed stays in its data
// directory. In-process calls in flight return first; later ones are
// refused.
func (e *Embedded) Close() error {
	e.calls.shutAndDrain()
	e.etcd.Close()
	return nil
}
