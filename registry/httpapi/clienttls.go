package httpapi

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
)

// ClientTLSFiles names the PEM files a client's TLS uses; every field is
// optional.
type ClientTLSFiles struct {
	// CAFile verifies the server's certificate; empty: the system roots.
	CAFile string
	// CertFile and KeyFile are the client certificate (mTLS identity) and
	// its key; together or not at all.
	CertFile, KeyFile string
}

// HTTPClient returns an http.Client using f (http.DefaultClient's
// transport settings otherwise), or http.DefaultClient when f is empty.
func (f ClientTLSFiles) HTTPClient() (*http.Client, error) {
	if f == (ClientTLSFiles{}) {
		return http.DefaultClient, nil
	}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, fmt.Errorf("httpapi: client tls: a certificate and its key go together")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CAFile != "" {
		pem, err := os.ReadFile(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("httpapi: client tls: CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("httpapi: client tls: CA %s: no PEM certificates", f.CAFile)
		}
		cfg.RootCAs = pool
	}
	if f.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("httpapi: client tls: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	return &http.Client{Transport: tr}, nil
}
