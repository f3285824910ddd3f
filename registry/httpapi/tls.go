package httpapi

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// TLSFiles names the PEM files the server's TLS uses.
type TLSFiles struct {
	CertFile string // server certificate chain; required for TLS
	KeyFile  string // its private key; required for TLS
	// ClientCAFile holds the CAs that client certificates must chain to.
	// Empty: no client certificates are asked for (identity then comes
	// from bearer tokens).
	ClientCAFile string
	// ClientCertOptional lets a client without a certificate through the
	// handshake (for a token to identify it instead). Default false: with a
	// ClientCAFile, every client must present a certificate that verifies.
	ClientCertOptional bool
}

// ServerTLSConfig loads f into a tls.Config with TLS 1.2 as the floor.
// Client certificates, when asked for, are verified against ClientCAFile
// by the TLS stack itself; CertAuth reads only verified chains.
func ServerTLSConfig(f TLSFiles) (*tls.Config, error) {
	if f.CertFile == "" || f.KeyFile == "" {
		return nil, fmt.Errorf("httpapi: tls: need both a certificate and a key file")
	}
	pair, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("httpapi: tls: %w", err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
	if f.ClientCAFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(f.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("httpapi: tls: client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("httpapi: tls: client CA %s: no PEM certificates", f.ClientCAFile)
	}
	cfg.ClientCAs = pool
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	if f.ClientCertOptional {
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}
