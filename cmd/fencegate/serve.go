package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/etcdstore"
	"github.com/fencegate/fencegate/registry/httpapi"
)

func init() {
	register(command{name: "serve", summary: "run the registry over HTTP (embedded etcd by default)", run: runServe})
}

// requestSweepInterval is how often serve sweeps the request index, 1 min.
const requestSweepInterval = time.Minute

// etcdDialTimeoutMs bounds connecting to an external etcd cluster, 5s.
const etcdDialTimeoutMs = 5000

// serveOptions are serve's flags.
type serveOptions struct {
	dataDir, listen, etcdEndpoints, etcdPrefix string
	keyFile                                    string
	issuerEpoch                                uint64
	tokenFile, tlsCert, tlsKey, clientCA       string
	admins                                     listFlag
	// unsafeNoFsync turns off the embedded etcd's fsync: tests only.
	unsafeNoFsync bool
	// limits are the registry's limits; zero fields take
	// registry.DefaultConfig's values.
	limits registry.Config
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func parseServe(args []string, stderr io.Writer) (*serveOptions, error) {
	o := &serveOptions{}
	fs := newFlags("serve", stderr)
	fs.StringVar(&o.dataDir, "data-dir", "", "directory for the embedded etcd, the generated signing key and the trust bundle (required)")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:7420", "address to serve the HTTP API on (port 0: any free port)")
	fs.StringVar(&o.etcdEndpoints, "etcd-endpoints", "", "comma-separated external etcd endpoints; default: an embedded single-member etcd in --data-dir")
	fs.StringVar(&o.etcdPrefix, "etcd-prefix", etcdstore.DefaultPrefix, "etcd key prefix; every replica of one registry uses the same")
	fs.StringVar(&o.keyFile, "key", "", "signing key file; default: generated into --data-dir on first start")
	fs.Uint64Var(&o.issuerEpoch, "issuer-epoch", 1, "issuer epoch grants are signed under (>= 1)")
	fs.StringVar(&o.tokenFile, "token-file", "", `bearer tokens for development: lines "<token> <identity>" or JSON {"<token>": "<identity>"}`)
	fs.StringVar(&o.tlsCert, "tls-cert", "", "server certificate (PEM); with --tls-key, serve HTTPS")
	fs.StringVar(&o.tlsKey, "tls-key", "", "server private key (PEM)")
	fs.StringVar(&o.clientCA, "client-ca", "", "CA bundle (PEM) client certificates must chain to; identity = SPIFFE URI SAN, else CN")
	fs.Var(&o.admins, "admin", "identity allowed to call /v1/admin/... (repeatable)")
	fs.BoolVar(&o.unsafeNoFsync, "unsafe-no-fsync", false, "turn off the embedded etcd's fsync (tests only: a crash loses grants)")
	l := &o.limits
	fs.Uint64Var(&l.TTLMsMin, "ttl-min-ms", 0, "shortest lease a client may ask for (0: 1000)")
	fs.Uint64Var(&l.TTLMsMax, "ttl-max-ms", 0, "longest lease (0: 600000)")
	fs.Uint64Var(&l.TTLMsDefault, "ttl-default-ms", 0, "lease TTL when a request names none (0: 15000)")
	fs.Uint64Var(&l.LockDelayMs, "lock-delay-ms", 0, "how long a resource stays ungrantable after an expiry, never after a release; >= --clock-skew-max-ms (0: 1000)")
	fs.Uint64Var(&l.ClockSkewMaxMs, "clock-skew-max-ms", 0, "bound on clock disagreement between registry, clients and gates over one lease (0: 500)")
	fs.Uint64Var(&l.StatusProofTTLMs, "status-proof-ttl-ms", 0, "longest life of a status proof (0: 2000)")
	fs.IntVar(&l.WaitersPerResourceMax, "waiters-max", 0, "waiting acquires per resource (0: 64)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.limits.IssuerEpoch = o.issuerEpoch
	if o.issuerEpoch != 0 {
		if err := o.limits.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	case o.dataDir == "":
		return nil, fmt.Errorf("%w: --data-dir is required", errUsage)
	case o.issuerEpoch == 0:
		return nil, fmt.Errorf("%w: --issuer-epoch must be at least 1", errUsage)
	case (o.tlsCert == "") != (o.tlsKey == ""):
		return nil, fmt.Errorf("%w: --tls-cert and --tls-key go together", errUsage)
	case o.clientCA != "" && o.tlsCert == "":
		return nil, fmt.Errorf("%w: --client-ca needs --tls-cert and --tls-key", errUsage)
	case o.tokenFile == "" && o.clientCA == "":
		return nil, fmt.Errorf("%w: no identity, no service: give --token-file (development) or --tls-cert, --tls-key and --client-ca (mTLS)", errUsage)
	}
	if err := httpapi.ValidateAdmins(o.admins); err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return o, nil
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseServe(args, stderr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return err
	}
	auth, err := httpapi.NewAuthenticator(o.tokenFile, o.clientCA != "")
	if err != nil {
		return err
	}
	ks, err := httpapi.SetupKey(o.dataDir, o.keyFile, o.issuerEpoch, nil)
	if err != nil {
		return err
	}
	if ks.Generated {
		fmt.Fprintf(stderr, "fencegate serve: generated signing key %s in %s\n", ks.Key.KeyID, ks.KeyPath)
	}
	if ks.WroteBundle {
		fmt.Fprintf(stderr, "fencegate serve: wrote trust bundle %s\n", ks.BundlePath)
	}
	store, closeStore, err := openStore(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer closeStore()
	return serveAPI(ctx, o, auth, ks, store, stdout, stderr)
}

// serveAPI builds the registry and HTTP server over store and serves
// until ctx ends.
func serveAPI(ctx context.Context, o *serveOptions, auth httpapi.Authenticator, ks *httpapi.KeySetup, store registry.Store, stdout, stderr io.Writer) error {
	metrics := httpapi.NewMetrics()
	cfg := o.limits // validated, defaults filled, by parseServe
	cfg.Observer = metrics
	reg, err := registry.New(httpapi.InstrumentStore(store, metrics), cfg, registry.SystemClock{}, ks.Key)
	if err != nil {
		return err
	}
	srv, err := httpapi.NewServer(httpapi.Config{Registry: reg, Store: store, Auth: auth, Admins: httpapi.Admins(o.admins), Metrics: metrics})
	if err != nil {
		return err
	}
	var tlsCfg *tls.Config
	if o.tlsCert != "" {
		if tlsCfg, err = httpapi.ServerTLSConfig(httpapi.TLSFiles{
			CertFile: o.tlsCert, KeyFile: o.tlsKey, ClientCAFile: o.clientCA, ClientCertOptional: o.tokenFile != "",
		}); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	if tlsCfg == nil && !isLoopback(ln.Addr()) {
		fmt.Fprintf(stderr, "fencegate serve: warning: bearer tokens travel in clear text on %s; use --tls-cert and --tls-key beyond development\n", ln.Addr())
	}
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "fencegate serve: listening on %s://%s\n", scheme, ln.Addr())
	fmt.Fprintf(stdout, "fencegate serve: trust bundle %s (key %s, issuer epoch %d)\n", ks.BundlePath, ks.Key.KeyID, o.issuerEpoch)
	// The sweep settles leases that expired unobserved and forgets request
	// IDs past retention; every replica may run it (each step is a CAS).
	go reg.SweepLoop(ctx, requestSweepInterval, func(deleted int, err error) {
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(stderr, "fencegate serve: request sweep: %v\n", err)
		}
	})
	return httpapi.Serve(ctx, ln, srv, tlsCfg)
}

// openStore opens the external cluster named by --etcd-endpoints, or
// starts the embedded member in --data-dir/etcd.
func openStore(ctx context.Context, o *serveOptions, stderr io.Writer) (registry.Store, func(), error) {
	if o.etcdEndpoints != "" {
		c, err := clientv3.New(clientv3.Config{
			Endpoints:   strings.Split(o.etcdEndpoints, ","),
			DialTimeout: etcdDialTimeoutMs * time.Millisecond,
			Logger:      zap.NewNop(),
			// Not tied to ctx: calls in flight at shutdown get their grace;
			// closeStore closes the client after Serve returns.
		})
		if err != nil {
			return nil, nil, fmt.Errorf("etcd %s: %w", o.etcdEndpoints, err)
		}
		fmt.Fprintf(stderr, "fencegate serve: using etcd cluster %s\n", o.etcdEndpoints)
		return etcdstore.New(c, o.etcdPrefix), func() { c.Close() }, nil
	}
	em, err := etcdstore.StartEmbedded(ctx, filepath.Join(o.dataDir, "etcd"), etcdstore.EmbeddedOptions{UnsafeNoFsync: o.unsafeNoFsync})
	if err != nil {
		return nil, nil, err
	}
	c, err := em.Client()
	if err != nil {
		em.Close()
		return nil, nil, err
	}
	fmt.Fprintf(stderr, "fencegate serve: embedded etcd in %s\n", filepath.Join(o.dataDir, "etcd"))
	return etcdstore.New(c, o.etcdPrefix), func() { c.Close(); em.Close() }, nil
}

func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
