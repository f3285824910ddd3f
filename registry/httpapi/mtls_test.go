// Tests the whole server over real mTLS: ServerTLSConfig from PEM files,
// Serve, and a Client whose identity is its certificate's SPIFFE ID
// (the grant's owner) or CN (an admin); without a certificate the
// handshake fails, unless tokens are also allowed.
package httpapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/wire"
)

func writePEM(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// serveTLS serves h's server over TLS from files; it stops at cleanup.
func serveTLS(t *testing.T, h *harness, files TLSFiles) string {
	t.Helper()
	cfg, err := ServerTLSConfig(files)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, h.server, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "https://" + ln.Addr().String()
}

func mtlsClient(t *testing.T, url string, roots *x509.CertPool, cert *tls.Certificate, opts ...httpclient.ClientOption) *httpclient.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: roots}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	c, err := httpclient.NewClient(url, append([]httpclient.ClientOption{httpclient.WithHTTPClient(hc)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMTLSEndToEnd(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	ca := newTestCA(t, "fencegate clients")
	_, srvCert, srvKey := ca.issue(t, leafSpec{cn: "registry", server: true})
	files := TLSFiles{
		CertFile:     writePEM(t, dir, "server.pem", srvCert),
		KeyFile:      writePEM(t, dir, "server-key.pem", srvKey),
		ClientCAFile: writePEM(t, dir, "ca.pem", ca.pem),
	}
	h.server.cfg.Admins = Admins{"spiffe-less-admin"} // before serving
	url := serveTLS(t, h, files)

	worker, _, _ := ca.issue(t, leafSpec{cn: "ignored", uris: []string{"spiffe://example.org/worker/settle-7"}, ed25519: true})
	admin, _, _ := ca.issue(t, leafSpec{cn: "spiffe-less-admin"})

	is, err := mtlsClient(t, url, ca.pool, &worker).Acquire(bg, acq("inv/tls", "r-1"))
	if err != nil {
		t.Fatal(err)
	}
	if is.Grant.Owner != "spiffe://example.org/worker/settle-7" {
		t.Fatalf("owner %q, want the certificate's SPIFFE ID", is.Grant.Owner)
	}
	ri, err := mtlsClient(t, url, ca.pool, &admin).Resource(bg, "inv/tls")
	if err != nil || ri.HolderOwner != is.Grant.Owner {
		t.Fatalf("admin by CN: %v %+v", err, ri)
	}
	_, err = mtlsClient(t, url, ca.pool, &worker).Resource(bg, "inv/tls")
	wantAPIError(t, err, 403, wire.CodeForbidden)

	before := h.store.calls.Load()
	_, err = mtlsClient(t, url, ca.pool, nil, httpclient.WithBearerToken(tokAlice)).Acquire(bg, acq("inv/tls", "r-2"))
	var ae *httpclient.APIError
	if err == nil || errors.As(err, &ae) {
		t.Fatalf("no client certificate with a required client CA: %v, want a failed handshake", err)
	}
	if h.store.calls.Load() != before {
		t.Fatal("a call without a certificate reached the store")
	}
}

func TestMTLSWithOptionalCertAndTokens(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	ca := newTestCA(t, "fencegate clients")
	_, srvCert, srvKey := ca.issue(t, leafSpec{cn: "registry", server: true})
	url := serveTLS(t, h, TLSFiles{
		CertFile:           writePEM(t, dir, "server.pem", srvCert),
		KeyFile:            writePEM(t, dir, "server-key.pem", srvKey),
		ClientCAFile:       writePEM(t, dir, "ca.pem", ca.pem),
		ClientCertOptional: true,
	})
	is, err := mtlsClient(t, url, ca.pool, nil, httpclient.WithBearerToken(tokAlice)).Acquire(bg, acq("inv/tls", "r-1"))
	if err != nil || is.Grant.Owner != "alice" {
		t.Fatalf("token over TLS: %v", err)
	}
	_, err = mtlsClient(t, url, ca.pool, nil).Acquire(bg, acq("inv/tls", "r-2"))
	wantAPIError(t, err, 401, wire.CodeUnauthenticated)
}

func TestServerTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := writePEM(t, dir, "x.pem", []byte("not pem"))
	for _, f := range []TLSFiles{
		{CertFile: "only-cert.pem"},
		{CertFile: notPEM, KeyFile: notPEM},
	} {
		if _, err := ServerTLSConfig(f); err == nil {
			t.Errorf("%+v: no error", f)
		}
	}
}
