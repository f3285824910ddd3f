// Package storedial is what the registry's two external stores, etcd
// (registry/etcdstore) and ZooKeeper (registry/zkstore), share in
// reaching their servers: the client's TLS configuration loaded from its
// PEM files, a TLS dial that verifies the server by the host it dials,
// and the diagnosis of a connection whose client reports nothing but a
// timeout. Each store keeps what is its own: its configuration's checks,
// its client library and its flags' names (passed in as hints).
package storedial

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// verdictWaitMs is how long Diagnose waits, after a TLS handshake, for
// the server to refuse the client certificate (TLS 1.3 sends that
// refusal after the client's side of the handshake is done), 500ms.
const verdictWaitMs = 500

// Files are a store client's TLS files (PEM).
type Files struct {
	// CACertFile verifies the servers' certificates. Optional: without
	// it, the system roots do.
	CACertFile string
	// CertFile and KeyFile are the client's certificate and key, for
	// servers that require one. Optional; together (each store's Check
	// refuses one without the other).
	CertFile, KeyFile string
}

// TLSConfig loads f into a client configuration (TLS 1.2 at least). Its
// errors start with pkg, the store's package name, and name the file
// that failed.
func TLSConfig(pkg string, f Files) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CACertFile != "" {
		pem, err := os.ReadFile(f.CACertFile)
		if err != nil {
			return nil, fmt.Errorf("%s: CA file: %w", pkg, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: CA file %s: no PEM certificates", pkg, f.CACertFile)
		}
		cfg.RootCAs = pool
	}
	if f.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%s: client certificate: %w", pkg, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// DialTLS connects to address (host:port) over network and completes a
// TLS handshake with cfg within timeout, verifying the server's
// certificate against address's host when cfg names no server. cfg is
// not modified.
func DialTLS(cfg *tls.Config, network, address string, timeout time.Duration) (net.Conn, error) {
	c := cfg.Clone()
	if host, _, err := net.SplitHostPort(address); err == nil && c.ServerName == "" {
		c.ServerName = host
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, c)
	if err != nil {
		return nil, err // not a nil *tls.Conn in a non-nil net.Conn
	}
	return conn, nil
}

// Probe is one diagnosis: where to connect, how, and what to tell the
// user for each fault found.
type Probe struct {
	// Address is the server's host:port.
	Address string
	// TLS is the client's configuration; nil for plain TCP.
	TLS *tls.Config
	// ALPN are the protocols the handshake offers (etcd's gRPC wants
	// "h2"). Optional.
	ALPN []string
	// Timeout bounds the dial and the handshake.
	Timeout time.Duration
	// CAHint follows a failed handshake ("check --etcd-cacert"), CertHint
	// the server's refusal of the client certificate. Required with TLS.
	CAHint, CertHint string
	// TCPHint is said when a plain TCP connection succeeds though the
	// store's client found no server there (""; say nothing).
	TCPHint string
}

// Diagnose says why a connection to p.Address failed when the store's
// client only reports a timeout: it dials TCP, and with TLS does the
// handshake and waits briefly for the server's verdict on the client
// certificate. It returns the cause in parentheses with a leading space,
// to append to the client's error, or p.TCPHint (or "") when it finds
// nothing wrong.
func (p Probe) Diagnose() string {
	if p.TLS == nil {
		conn, err := net.DialTimeout("tcp", p.Address, p.Timeout)
		if err != nil {
			return fmt.Sprintf(" (TCP %s: %v)", p.Address, err)
		}
		conn.Close()
		return p.TCPHint
	}
	cfg := p.TLS.Clone()
	if len(p.ALPN) > 0 {
		cfg.NextProtos = p.ALPN
	}
	conn, err := DialTLS(cfg, "tcp", p.Address, p.Timeout)
	if err != nil {
		return fmt.Sprintf(" (TLS with %s: %v; %s)", p.Address, err, p.CAHint)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(verdictWaitMs * time.Millisecond))
	var b [1]byte
	if _, err := conn.Read(b[:]); err != nil {
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return fmt.Sprintf(" (TLS with %s: %v; %s)", p.Address, err, p.CertHint)
		}
	}
	return ""
}
