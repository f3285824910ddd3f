package zkstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry/internal/storedial"
)

// Defaults of ClientConfig.
const (
	// DialTimeoutMsDefault bounds connecting (a session established, the
	// root read) when ClientConfig.DialTimeout is zero, 5s.
	DialTimeoutMsDefault = 5000
	// SessionTimeoutMsDefault is the session timeout asked of the ensemble
	// when ClientConfig.SessionTimeout is zero, 10s; the server clamps it
	// to [2, 20] ticks.
	SessionTimeoutMsDefault = 10_000
)

// ClientConfig is how serve reaches a ZooKeeper ensemble.
type ClientConfig struct {
	// Servers are the ensemble's client addresses, host:port. Required.
	Servers []string
	// CACertFile verifies the servers' certificates (PEM); with it, or
	// with CertFile, every connection is TLS (the servers'
	// secureClientPort). Optional: TLS without it verifies against the
	// system roots.
	CACertFile string
	// CertFile and KeyFile are this client's certificate and key (PEM),
	// for an ensemble with ssl.clientAuth=need. Optional; together.
	CertFile, KeyFile string
	// TLS turns TLS on with neither file given (system roots, no client
	// certificate). Optional, defaults to false.
	TLS bool
	// Username and Password authenticate with the digest scheme
	// (addauth digest user:password); every node the store creates is
	// then readable and writable only by the identities of the session
	// that made it: that user, and with TLS the client certificate's
	// subject (ZooKeeper's x509 scheme). Optional; together.
	Username, Password string
	// SessionTimeout is asked of the ensemble. Optional, defaults to
	// SessionTimeoutMsDefault.
	SessionTimeout time.Duration
	// DialTimeout bounds Dial. Optional, defaults to DialTimeoutMsDefault.
	DialTimeout time.Duration
}

// ErrBadClientConfig: a ClientConfig that can never connect (checked
// before anything is dialled).
var ErrBadClientConfig = errors.New("zkstore: bad client config")

// Check validates c without touching the network or the files.
func (c ClientConfig) Check() error {
	if len(c.Servers) == 0 {
		return fmt.Errorf("%w: no servers", ErrBadClientConfig)
	}
	for _, s := range c.Servers {
		if strings.Contains(s, "://") || strings.Contains(s, "/") {
			return fmt.Errorf("%w: server %q: want host:port (a chroot goes in the root, not the address)", ErrBadClientConfig, s)
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			return fmt.Errorf("%w: server %q: want host:port", ErrBadClientConfig, s)
		}
	}
	switch {
	case (c.CertFile == "") != (c.KeyFile == ""):
		return fmt.Errorf("%w: a client certificate and its key go together", ErrBadClientConfig)
	case (c.Username == "") != (c.Password == ""):
		return fmt.Errorf("%w: digest auth needs both a user and a password", ErrBadClientConfig)
	case strings.Contains(c.Username, ":"):
		return fmt.Errorf("%w: a digest user name cannot contain ':'", ErrBadClientConfig)
	}
	return nil
}

// ACL is what the store gives the nodes it creates: the authenticated
// user's when digest auth is on (zk.AuthACL), anyone's otherwise.
func (c ClientConfig) ACL() []zk.ACL {
	if c.Username != "" {
		return zk.AuthACL(zk.PermAll)
	}
	return zk.WorldACL(zk.PermAll)
}

func (c ClientConfig) useTLS() bool { return c.TLS || c.CACertFile != "" || c.CertFile != "" }

// tlsConfig loads the TLS files.
func (c ClientConfig) tlsConfig() (*tls.Config, error) {
	return storedial.TLSConfig("zkstore", storedial.Files{CACertFile: c.CACertFile, CertFile: c.CertFile, KeyFile: c.KeyFile})
}

// Dial connects to the ensemble, waits for a session, authenticates, and
// proves it may use root by reading it (or its nearest existing parent),
// so a wrong address, certificate or password fails here with its cause
// rather than at the first acquire. The connection is not tied to ctx;
// the caller closes it.
func Dial(ctx context.Context, c ClientConfig, root string) (*zk.Conn, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	timeout := orDefault(c.DialTimeout, DialTimeoutMsDefault)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dial := zk.Dialer(net.DialTimeout)
	if c.useTLS() {
		tlsCfg, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		dial = tlsDialer(tlsCfg)
	}
	conn, events, err := zk.Connect(c.Servers, orDefault(c.SessionTimeout, SessionTimeoutMsDefault),
		zk.WithDialer(dial), zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("zkstore: connect %s: %w", strings.Join(c.Servers, ","), err)
	}
	if err := awaitSession(ctx, events); err != nil {
		conn.Close()
		return nil, fmt.Errorf("zkstore: ZooKeeper at %s: no session within %s: %w%s", strings.Join(c.Servers, ","), timeout, err, diagnose(c))
	}
	if c.Username != "" {
		if err := do(ctx, func() error { return conn.AddAuth("digest", []byte(c.Username+":"+c.Password)) }); err != nil {
			conn.Close()
			return nil, fmt.Errorf("zkstore: digest auth as %s: %w", c.Username, err)
		}
	}
	if err := probe(ctx, conn, root); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// awaitSession waits for the client's first session.
func awaitSession(ctx context.Context, events <-chan zk.Event) error {
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return errors.New("connection closed")
			}
			if ev.State == zk.StateHasSession {
				return nil
			}
			if ev.State == zk.StateAuthFailed {
				return errors.New("authentication failed")
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// probe reads root, or its nearest existing parent when root is new.
func probe(ctx context.Context, conn *zk.Conn, root string) error {
	if root == "" {
		root = DefaultRoot
	}
	for p := root; ; p = parentOf(p) {
		err := do(ctx, func() error { _, _, e := conn.Get(p); return e })
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNoNode) && p != "/":
			continue
		case errors.Is(err, zk.ErrNoAuth):
			return fmt.Errorf("zkstore: reading %s: %w (a wrong password, or the node belongs to another user)", p, err)
		default:
			return fmt.Errorf("zkstore: reading %s: %w", p, err)
		}
	}
}

func parentOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "/"
}

func orDefault(d time.Duration, ms int) time.Duration {
	if d <= 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return d
}

func tlsDialer(cfg *tls.Config) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		return storedial.DialTLS(cfg, network, address, timeout)
	}
}

// diagnose says why no session came when the client only reports a
// timeout (storedial.Probe, on the first server), or what to check when
// a plain TCP connection succeeds.
func diagnose(c ClientConfig) string {
	p := storedial.Probe{
		Address: c.Servers[0], Timeout: orDefault(c.DialTimeout, DialTimeoutMsDefault),
		CAHint:   "check --zookeeper-cacert, --zookeeper-cert/--zookeeper-key",
		CertHint: "check --zookeeper-cert/--zookeeper-key",
		TCPHint:  " (TCP connects: is it ZooKeeper's client port, or its secureClientPort without --zookeeper-cacert?)",
	}
	if c.useTLS() {
		cfg, err := c.tlsConfig()
		if err != nil {
			return ""
		}
		p.TLS = cfg
	}
	return p.Diagnose()
}

// quiet drops the client's log lines: the store reports what matters as
// errors.
type quiet struct{}

func (quiet) Printf(string, ...any) {}
