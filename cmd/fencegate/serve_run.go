package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/dashboard"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/telemetry"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/etcdstore"
	"github.com/fencegate/fencegate/registry/httpapi"
)

// The running server: the store, the HTTP API and its listener, the
// dashboard, until the context ends. Flags and their checks are in
// serve.go.

func runServe(ctx context.Context, o *serveOptions, stdout, stderr io.Writer) error {
	if err := o.check(); err != nil {
		return err
	}
	ld, err := o.load()
	if err != nil {
		return err
	}
	defer ld.ln.Close()
	// The key and the bundle are made and checked in memory; they are
	// written once everything else is ready (serveAPI), so a serve that
	// cannot start leaves --data-dir as it found it.
	ks, err := httpapi.PlanKey(o.dataDir, o.keyFile, o.issuerEpoch, nil)
	if err != nil {
		return err
	}
	if !o.external() { // the embedded etcd lives in it
		if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
			return fmt.Errorf("--data-dir: %w", err)
		}
	}
	store, engine, closeStore, err := openStore(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer closeStore()
	return serveAPI(ctx, o, ld, ks, store, engine, stdout, stderr)
}

// serveAPI builds the registry and HTTP server over store and serves
// until ctx ends.
func serveAPI(ctx context.Context, o *serveOptions, ld *loaded, ks *httpapi.KeySetup, store registry.Store, engine storeEngine, stdout, stderr io.Writer) error {
	metrics := httpapi.NewMetrics()
	engine.register(metrics.Registry())
	cfg := o.limits // validated, defaults filled, by check
	cfg.Observer = metrics
	reg, err := registry.New(httpapi.InstrumentStore(store, metrics), cfg, clock.System{}, ks.Key, gateKeysRegistryOptions(ld.gates)...)
	if err != nil {
		return err
	}
	logger, err := telemetry.NewLogger(stderr, o.logFormat, o.logLevel)
	if err != nil {
		return err
	}
	tp, shutdownTracing, err := telemetry.SetupTracing(ctx, telemetry.TraceConfig{OTLPEndpoint: o.otlpEndpoint, ServiceName: "fencegate-registry", Version: versionString(buildInfo())})
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), telemetry.ShutdownTimeout)
		defer cancel()
		_ = shutdownTracing(sctx)
	}()
	announceAndWatch(ctx, ld.policy, o.authz.pollMs, logger, stderr)
	if err := watchGateKeys(ctx, ld.gates, reg, o.gateKeys.pollMs, logger); err != nil {
		return err
	}
	dash, err := o.newDashboard(reg, store, engine.name, ld, ks, metrics, logger, stderr)
	if err != nil {
		return err
	}
	var seen func(string)
	if dash != nil {
		seen = dash.NoteResource
	}
	srv, err := httpapi.NewServer(httpapi.Config{Registry: reg, Store: store, Auth: ld.auth, Authorizer: ld.authz, Admins: httpapi.Admins(o.admins), Metrics: metrics,
		Logger: logger, RequestLog: o.requestLog, TracerProvider: tp, TrustBundle: publisher(ks), Seen: seen})
	if err != nil {
		return err
	}
	if err := writeKeySetup(ks, stderr); err != nil {
		return err
	}
	if ld.tlsCfg == nil && !isLoopback(ld.ln.Addr()) {
		fmt.Fprintf(stderr, "fencegate serve: warning: bearer tokens travel in clear text on %s; use --tls-cert and --tls-key beyond development\n", ld.ln.Addr())
	}
	scheme := "http"
	if ld.tlsCfg != nil {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "fencegate serve: listening on %s://%s\n", scheme, ld.ln.Addr())
	fmt.Fprintf(stdout, "fencegate serve: trust bundle %s (key %s, issuer epoch %d)\n", ks.BundlePath, ks.Key.KeyID, o.issuerEpoch)
	if dash != nil {
		fmt.Fprintf(stdout, "fencegate serve: dashboard at %s://%s%s\n", scheme, ld.ln.Addr(), dashboard.PathPrefix)
	}
	if engine.space != nil {
		metrics.WatchSpace(engine.space.Status)
		go engine.space.Run(ctx, logger)
	}
	// The sweep settles leases that expired unobserved and forgets request
	// IDs past retention; every replica may run it (each step is a CAS).
	if o.reindexRequests {
		go func() {
			n, err := reg.IndexRequests(ctx)
			if err != nil && ctx.Err() == nil {
				fmt.Fprintf(stderr, "fencegate serve: --reindex-requests: %v\n", err)
				return
			}
			fmt.Fprintf(stderr, "fencegate serve: --reindex-requests: indexed %d request entries\n", n)
		}()
	}
	go reg.SweepLoop(ctx, registry.SweepIntervalDefault, func(deleted int, err error) {
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(stderr, "fencegate serve: request sweep: %v\n", err)
		}
	})
	err = httpapi.Serve(ctx, ld.ln, withDashboard(ctx, dash, srv), ld.tlsCfg)
	// Releases answered early (--release-early) get their commits before
	// the process exits; one still in flight then ends at its TTL.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseFlushTimeout)
	defer cancel()
	_ = reg.FlushReleases(fctx)
	return err
}

// releaseFlushTimeout bounds how long serve, stopping, waits for the
// commits of releases it answered early.
const releaseFlushTimeout = 5 * time.Second

// writeKeySetup stores the key and bundle PlanKey made, saying so.
func writeKeySetup(ks *httpapi.KeySetup, stderr io.Writer) error {
	if err := ks.Write(); err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	if ks.Generated {
		fmt.Fprintf(stderr, "fencegate serve: generated signing key %s in %s\n", ks.Key.KeyID, ks.KeyPath)
	}
	if ks.WroteBundle {
		fmt.Fprintf(stderr, "fencegate serve: wrote trust bundle %s\n", ks.BundlePath)
	}
	return nil
}

// publisher signs the data directory's bundle file on each GET
// /v1/trust-bundle, with the registry's key when it is Ed25519 (an HMAC
// registry publishes none: gates then get the bundle by hand).
func publisher(ks *httpapi.KeySetup) httpapi.BundlePublisher {
	if ks.Key.Alg != grant.AlgEd25519 {
		return nil
	}
	return httpapi.FileBundlePublisher(ks.BundlePath, ks.Key)
}

// storeEngine names the store serve runs on: label is the metrics'
// (fencegate_store_info{engine=...}), name the dashboard's; space, on
// etcd, watches the store's space (serve runs it).
type storeEngine struct {
	label, name string
	space       *etcdstore.Space
}

var (
	engineEmbeddedEtcd = storeEngine{label: "etcd-embedded", name: "embedded etcd"}
	engineEtcd         = storeEngine{label: "etcd", name: "etcd cluster"}
	engineZooKeeper    = storeEngine{label: "zookeeper", name: "ZooKeeper"}
)

// register adds fencegate_store_info, 1 for the engine, to reg.
func (e storeEngine) register(reg prometheus.Registerer) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fencegate_store_info", Help: "The store this server runs on: 1 for its engine (etcd-embedded, etcd or zookeeper).",
	}, []string{"engine"})
	reg.MustRegister(g)
	g.WithLabelValues(e.label).Set(1)
}

// openStore opens serve's store (storeOptions.open).
func openStore(ctx context.Context, o *serveOptions, stderr io.Writer) (registry.Store, storeEngine, func(), error) {
	return o.storeOptions.open(ctx, "fencegate serve", stderr)
}

func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
