package etcdstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate/registry/internal/storedial"
)

// DialTimeoutMsDefault bounds connecting to an external etcd cluster (and
// the first read that proves it answers) when ClientConfig.DialTimeout is
// zero, 5s.
const DialTimeoutMsDefault = 5000

// ClientConfig is how serve reaches an external etcd cluster.
type ClientConfig struct {
	// Endpoints are the cluster's client URLs (http:// or https://; a
	// bare host:port is plain http). Required.
	Endpoints []string
	// CACertFile verifies the cluster's server certificates (PEM).
	// Optional: without it, https endpoints are verified against the
	// system roots.
	CACertFile string
	// CertFile and KeyFile are this client's certificate and key (PEM),
	// for a cluster that requires client certificates. Optional; together.
	CertFile, KeyFile string
	// Username and Password authenticate with etcd's own auth (etcd
	// `auth enable`). Optional; a password needs a username.
	Username, Password string
	// DialTimeout bounds the connection and the first read. Optional,
	// defaults to DialTimeoutMsDefault.
	DialTimeout time.Duration
}

// ErrBadClientConfig: a ClientConfig that can never connect (checked
// before anything is dialled).
var ErrBadClientConfig = errors.New("etcdstore: bad client config")

// Check validates c without touching the network or the files' contents.
func (c ClientConfig) Check() error {
	if len(c.Endpoints) == 0 {
		return fmt.Errorf("%w: no endpoints", ErrBadClientConfig)
	}
	anyHTTPS := false
	for _, e := range c.Endpoints {
		if !strings.Contains(e, "://") {
			if _, _, err := net.SplitHostPort(e); err != nil {
				return fmt.Errorf("%w: endpoint %q: want http(s)://host:port", ErrBadClientConfig, e)
			}
			continue
		}
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: endpoint %q: want http(s)://host:port", ErrBadClientConfig, e)
		}
		anyHTTPS = anyHTTPS || u.Scheme == "https"
	}
	switch {
	case (c.CertFile == "") != (c.KeyFile == ""):
		return fmt.Errorf("%w: a client certificate and its key go together", ErrBadClientConfig)
	case (c.CACertFile != "" || c.CertFile != "") && !anyHTTPS:
		return fmt.Errorf("%w: TLS files given but no https:// endpoint", ErrBadClientConfig)
	case c.Password != "" && c.Username == "":
		return fmt.Errorf("%w: a password needs a username", ErrBadClientConfig)
	}
	return nil
}

// tlsConfig loads the TLS files, or returns nil when there are none and no
// endpoint is https.
func (c ClientConfig) tlsConfig() (*tls.Config, error) {
	https := false
	for _, e := range c.Endpoints {
		https = https || strings.HasPrefix(e, "https://")
	}
	if !https {
		return nil, nil
	}
	return storedial.TLSConfig("etcdstore", storedial.Files{CACertFile: c.CACertFile, CertFile: c.CertFile, KeyFile: c.KeyFile})
}

// Dial connects to the cluster and proves it answers with one
// linearizable read under prefix (the store's, so a user whose role grants
// only that prefix passes), so a wrong endpoint, certificate or password fails
// here, with its cause, rather than at the first acquire. The client is
// not tied to ctx; the caller closes it.
func Dial(ctx context.Context, c ClientConfig, prefix string) (*clientv3.Client, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	tlsCfg, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	timeout := c.DialTimeout
	if timeout <= 0 {
		timeout = DialTimeoutMsDefault * time.Millisecond
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: c.Endpoints, DialTimeout: timeout, TLS: tlsCfg,
		Username: c.Username, Password: c.Password, Logger: zap.NewNop(),
		DialOptions: dialOptions(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcdstore: connect %s: %w%s", strings.Join(c.Endpoints, ","), err, diagnose(c.Endpoints[0], tlsCfg, timeout))
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := cli.Get(rctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcdstore: etcd at %s does not answer within %s: %w%s", strings.Join(c.Endpoints, ","), timeout, err, diagnose(c.Endpoints[0], tlsCfg, timeout))
	}
	return cli, nil
}

// diagnose says why a connection to endpoint failed when the etcd client
// only reports a timeout (storedial.Probe), or "".
func diagnose(endpoint string, tlsCfg *tls.Config, timeout time.Duration) string {
	host := endpoint
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		host = u.Host
	}
	return storedial.Probe{
		Address: host, TLS: tlsCfg, ALPN: []string{"h2"}, Timeout: timeout,
		CAHint: "check --etcd-cacert", CertHint: "check --etcd-cert/--etcd-key",
	}.Diagnose()
}
