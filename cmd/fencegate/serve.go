package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/telemetry"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
)

func init() { register(newServeCmd) }

// serveOptions are serve's flags.
type serveOptions struct {
	storeOptions
	listen                               string
	keyFile                              string
	issuerEpoch                          uint64
	tokenFile, tlsCert, tlsKey, clientCA string
	admins                               []string
	logFormat, logLevel, otlpEndpoint    string
	requestLog                           bool
	// grantHeld is --grant-held-statement: a fresh grant is its own HELD
	// statement (registry.Config.SeparateStatus false).
	grantHeld bool
	// reindexRequests is --reindex-requests: give every request entry a
	// sweep index item at start (registry.IndexRequests).
	reindexRequests bool
	dash            dashboardOptions
	authz           authzOptions
	gateKeys        gateKeysOptions
	dev             devOptions
	// limits are the registry's limits; zero fields take
	// registry.DefaultConfig's values.
	limits registry.Config
}

func newServeCmd() *cobra.Command {
	o := &serveOptions{}
	c := &cobra.Command{
		Use:   "serve",
		Short: "run the registry over HTTP (embedded etcd by default, or etcd or ZooKeeper)",
		Long: `Run the registry: leases, fence tokens and signed grants over HTTP.

By default it starts a single-member etcd inside the process, in
--data-dir/etcd; with --etcd-endpoints it uses an external etcd cluster
instead, and several serve replicas may share it (same --etcd-prefix, --key
and --issuer-epoch on each); with --zookeeper it runs on a ZooKeeper
ensemble the same way (same --zookeeper-root). On first start without --key it generates a
signing key and writes the trust bundle gates need, both in --data-dir.

Who may lock what is a resource policy (--authz-policy FILE): rules that
let identities (names, prefixes, SPIFFE patterns) acquire, see or break
resources (names or prefixes); anything no rule allows is refused with
403 FORBIDDEN_RESOURCE and audited. It is reloaded on SIGHUP and when the
file changes; a bad edit keeps the policy in force. serve refuses to start
without one unless --authz-open says every identity may lock everything.
Admin calls (--admin) are not scoped by the policy.

Every flag is checked, every file it names read, the listen address bound
and the store reached before the data directory is written: a serve that
cannot start leaves it as it found it. A relative path in any flag is
from the working directory.`,
		Example: `  fencegate serve --dev     # a registry to try things with: loopback, one identity, its token printed
  fencegate serve --data-dir /var/lib/fencegate --token-file /etc/fencegate/tokens --authz-policy /etc/fencegate/policy.json
  FENCEGATE_DATA_DIR=/var/lib/fencegate FENCEGATE_TOKEN_FILE=tokens FENCEGATE_AUTHZ_OPEN=true fencegate serve
  fencegate serve --data-dir /var/lib/fencegate --key /etc/fencegate/k1.key \
    --etcd-endpoints https://etcd-1:2379,https://etcd-2:2379 --etcd-cacert etcd-ca.pem \
    --tls-cert server.pem --tls-key server-key.pem --client-ca clients-ca.pem --authz-policy policy.json
  fencegate serve --data-dir /var/lib/fencegate --key /etc/fencegate/k1.key --token-file tokens --authz-policy policy.json \
    --zookeeper zk-1:2181,zk-2:2181,zk-3:2181 --zookeeper-user fencegate --zookeeper-password-file zk-password`,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.dev.apply(o, c.ErrOrStderr()); err != nil {
				return err
			}
			return runServe(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	fs := c.Flags()
	o.storeOptions.flags(fs, "directory for the embedded etcd, the generated signing key and the trust bundle (required)")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:7420", "address to serve the HTTP API on (port 0: any free port)")
	fs.StringVar(&o.keyFile, "key", "", "signing key file; default: generated into --data-dir on first start")
	fs.Uint64Var(&o.issuerEpoch, "issuer-epoch", 1, "issuer epoch grants are signed under (>= 1)")
	fs.StringVar(&o.tokenFile, "token-file", "", `bearer tokens for development: lines "<token> <identity>" or JSON {"<token>": "<identity>"}`)
	fs.StringVar(&o.tlsCert, "tls-cert", "", "server certificate (PEM); with --tls-key, serve HTTPS")
	fs.StringVar(&o.tlsKey, "tls-key", "", "server private key (PEM)")
	fs.StringVar(&o.clientCA, "client-ca", "", "CA bundle (PEM) client certificates must chain to; identity = SPIFFE URI SAN, else CN")
	fs.StringSliceVar(&o.admins, "admin", nil, "identity allowed to call /v1/admin/... (repeatable, or comma-separated)")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format on stderr: text or json")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.BoolVar(&o.requestLog, "request-log", true, "log every API call: method, path, identity, resource, outcome, latency_ms, fence, trace_id")
	fs.StringVar(&o.otlpEndpoint, "otlp-endpoint", "", "export traces over OTLP/HTTP to this collector, e.g. http://otel-collector:4318 (default: no traces exported)")
	fs.BoolVar(&o.unsafeNoFsync, "unsafe-no-fsync", false, "turn off the embedded etcd's fsync (tests only: a crash loses grants)")
	l := &o.limits
	fs.Uint64Var(&l.TTLMsMin, "ttl-min-ms", 0, "shortest lease a client may ask for (0: 2000)")
	fs.Uint64Var(&l.TTLMsMax, "ttl-max-ms", 0, "longest lease (0: 600000)")
	fs.Uint64Var(&l.TTLMsDefault, "ttl-default-ms", 0, "lease TTL when a request names none (0: 15000)")
	fs.Uint64Var(&l.LockDelayMs, "lock-delay-ms", 0, "how long a resource stays ungrantable after an expiry, never after a release; >= --clock-skew-max-ms (0: 1000)")
	fs.Uint64Var(&l.ClockSkewMaxMs, "clock-skew-max-ms", 0, "bound on clock disagreement between registry, clients and gates over one lease (0: 500)")
	fs.Uint64Var(&l.StatusProofTTLMs, "status-proof-ttl-ms", 0, "longest life of a status proof (0: 2000)")
	fs.IntVar(&l.WaitersPerResourceMax, "waiters-max", 0, "waiting acquires per resource (0: 64)")
	fs.Uint64Var(&l.RequestRetentionMs, "request-retention-ms", 0, "how long a request ID answers after its lease ended, 15 min plus --clock-skew-max-ms to 30 days (0: 960000, the specification's 15 minutes to reconcile an unknown outcome plus --clock-skew-max-ms, in whole minutes)")
	fs.BoolVar(&l.ReleaseEarly, "release-early", false, "answer a release once its commit is decided and sent, not once it is durable: the caller waits for no commit; a commit lost after the answer leaves the lease to end at its TTL (docs/guarantees.md, \"A release answered early\")")
	fs.BoolVar(&o.reindexRequests, "reindex-requests", false, "at start, give every request entry a sweep index item: once, after a rolling upgrade from a version before the sweep index (the first start after one does it by itself)")
	fs.BoolVar(&o.grantHeld, "grant-held-statement", true, "a fresh grant carries its own HELD statement (heldUntil) and is an acquire's one signed message; false issues the earlier form, grant plus status, while gates that predate it remain")
	fs.BoolVar(&l.BatchGrantProofs, "grant-batch-proofs", false, "sign the fresh grants of one group commit under one Ed25519 signature over their Merkle root, each grant's proof its path (batch:…); off until every gate takes them: Go gates of this version, the gate inside PostgreSQL from schema version 8 (docs/operations.md)")
	o.dash.flags(fs)
	o.authz.flags(fs)
	o.gateKeys.flags(fs)
	o.dev.flags(fs)
	bindEnv(fs)
	pathFlags(fs, "data-dir", "key", "token-file", "tls-cert", "tls-key", "client-ca", "authz-policy", "gate-keys",
		"etcd-cacert", "etcd-cert", "etcd-key", "etcd-password-file", "zookeeper-cacert", "zookeeper-cert", "zookeeper-key", "zookeeper-password-file")
	return c
}

// check validates every flag without touching the file system or the
// network. Its errors are usage errors that say what to change.
func (o *serveOptions) check() error {
	o.limits.IssuerEpoch = o.issuerEpoch
	o.limits.SeparateStatus = !o.grantHeld
	switch {
	case o.dataDir == "":
		return usagef("--data-dir is required: a directory for the embedded etcd, the signing key and the trust bundle (or set FENCEGATE_DATA_DIR)")
	case o.issuerEpoch == 0:
		return usagef("--issuer-epoch must be at least 1")
	case (o.tlsCert == "") != (o.tlsKey == ""):
		return usagef("--tls-cert and --tls-key go together: give both to serve HTTPS, or neither")
	case o.clientCA != "" && o.tlsCert == "":
		return usagef("--client-ca needs --tls-cert and --tls-key (client certificates need HTTPS)")
	case o.tokenFile == "" && o.clientCA == "" && !o.dev.on:
		return usagef("no identity, no service: give --token-file (development) or --tls-cert, --tls-key and --client-ca (mTLS)")
	}
	if err := checkListen(o.listen); err != nil {
		return err
	}
	if _, err := telemetry.NewLogger(io.Discard, o.logFormat, o.logLevel); err != nil {
		return usagef("--log-format/--log-level: %v", err)
	}
	if err := telemetry.CheckEndpoint(o.otlpEndpoint); err != nil {
		return usagef("--otlp-endpoint: %v", err)
	}
	if err := o.limits.Validate(); err != nil {
		return usagef("%v", err)
	}
	if err := httpapi.ValidateAdmins(o.admins); err != nil {
		return usagef("--admin: %v", err)
	}
	if err := o.dash.check(); err != nil {
		return err
	}
	if err := o.authz.check(); err != nil {
		return err
	}
	return o.storeOptions.check()
}

// checkListen wants host:port with a numeric port.
func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--listen %q: want host:port, e.g. 127.0.0.1:7420 or 0.0.0.0:7420", addr)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return usagef("--listen %q: the port must be a number from 0 to 65535", addr)
	}
	return nil
}

// loaded is what serve reads before its first side effect.
type loaded struct {
	auth   httpapi.Authenticator
	authz  httpapi.Authorizer
	policy *httpapi.PolicyFile   // nil under --authz-open
	gates  *httpapi.GateKeysFile // nil without --gate-keys
	tlsCfg *tls.Config
	ln     net.Listener
}

// load reads the credentials and binds the listener; nothing is written.
func (o *serveOptions) load() (*loaded, error) {
	auth, err := o.authenticator()
	if err != nil {
		return nil, err
	}
	ld := &loaded{auth: auth}
	if ld.authz, ld.policy, err = o.authz.load(); err != nil {
		return nil, err
	}
	if ld.gates, err = o.gateKeys.load(); err != nil {
		return nil, err
	}
	if o.tlsCert != "" {
		if ld.tlsCfg, err = httpapi.ServerTLSConfig(httpapi.TLSFiles{
			CertFile: o.tlsCert, KeyFile: o.tlsKey, ClientCAFile: o.clientCA, ClientCertOptional: o.tokenFile != "",
		}); err != nil {
			return nil, err
		}
	}
	if o.keyFile != "" {
		if _, err := grant.LoadKeyFile(o.keyFile); err != nil {
			return nil, fmt.Errorf("--key: %w", err)
		}
	}
	if err := o.storeOptions.load(); err != nil {
		return nil, err
	}
	if ld.ln, err = net.Listen("tcp", o.listen); err != nil {
		return nil, fmt.Errorf("--listen: %w (is another serve running? pick another address, or port 0)", err)
	}
	return ld, nil
}

// authenticator is --dev's identity, or the token file's and client
// certificates'.
func (o *serveOptions) authenticator() (httpapi.Authenticator, error) {
	if o.dev.on {
		return devAuth()
	}
	auth, err := httpapi.NewAuthenticator(o.tokenFile, o.clientCA != "")
	if err != nil {
		return nil, fmt.Errorf("--token-file: %w", err)
	}
	return auth, nil
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
