// This file proves the stores' shared dialing against real listeners:
// TLSConfig loads a CA and a client pair and names the file that fails;
// Diagnose finds a closed port, says the store's hint when TCP connects,
// names the CA when the handshake fails and the client certificate when
// the server refuses it after the handshake, and finds nothing wrong
// with the right files. (etcdstore's external tests and zkstore's
// dial_test.go run the same code through each store's Dial on real
// servers.)
package storedial

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/testkit/zktest"
)

func pki(t *testing.T) *zktest.PKI {
	t.Helper()
	p, err := zktest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTLSConfigLoadsAndNamesWhatFails(t *testing.T) {
	p := pki(t)
	cfg, err := TLSConfig("somestore", Files{CACertFile: p.CAFile, CertFile: p.ClientCert, KeyFile: p.ClientKey})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RootCAs == nil || len(cfg.Certificates) != 1 || cfg.MinVersion != tls.VersionTLS12 {
		t.Fatalf("loaded %+v", cfg)
	}
	if cfg, err := TLSConfig("somestore", Files{}); err != nil || cfg.RootCAs != nil || len(cfg.Certificates) != 0 {
		t.Fatalf("no files: %+v %v, want the system roots and no client certificate", cfg, err)
	}
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		files Files
		want  string
	}{
		{Files{CACertFile: filepath.Join(t.TempDir(), "missing.pem")}, "somestore: CA file: "},
		{Files{CACertFile: notPEM}, "somestore: CA file " + notPEM + ": no PEM certificates"},
		{Files{CertFile: p.ClientCert, KeyFile: p.ServerKeyStore}, "somestore: client certificate: "},
	} {
		if _, err := TLSConfig("somestore", c.files); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.files, err, c.want)
		}
	}
}

// tlsServer listens on loopback with the PKI's server certificate,
// requires a client certificate of its CA, and holds each connection
// open without writing, as etcd and ZooKeeper wait for the client's
// first request.
func tlsServer(t *testing.T, p *zktest.PKI) string {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(p.ServerKeyStore, p.ServerKeyStore)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				if conn.(*tls.Conn).Handshake() == nil {
					_, _ = io.Copy(io.Discard, conn)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestDiagnoseFindsTheFault(t *testing.T) {
	p := pki(t)
	addr := tlsServer(t, p)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	load := func(f Files) *tls.Config {
		cfg, err := TLSConfig("somestore", f)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	right := Files{CACertFile: p.CAFile, CertFile: p.ClientCert, KeyFile: p.ClientKey}
	hints := func(pr Probe) Probe {
		pr.Timeout, pr.CAHint, pr.CertHint, pr.TCPHint = 2*time.Second, "check the CA", "check the client pair", " (TCP connects)"
		return pr
	}
	for _, c := range []struct {
		name       string
		probe      Probe
		start, end string // what the diagnosis starts and ends with; both "" for none
	}{
		{"nothing listening", hints(Probe{Address: closedAddr}), " (TCP " + closedAddr + ": ", ")"},
		{"TCP connects", hints(Probe{Address: addr}), " (TCP connects)", ""},
		{"unknown CA", hints(Probe{Address: addr, TLS: load(Files{CACertFile: p.OtherCAFile, CertFile: p.ClientCert, KeyFile: p.ClientKey})}), " (TLS with " + addr + ": ", "; check the CA)"},
		{"no client certificate", hints(Probe{Address: addr, TLS: load(Files{CACertFile: p.CAFile})}), " (TLS with " + addr + ": ", "; check the client pair)"},
		{"the right files", hints(Probe{Address: addr, TLS: load(right), ALPN: []string{"h2"}}), "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.probe.Diagnose()
			if c.start == "" && got != "" || !strings.HasPrefix(got, c.start) || !strings.HasSuffix(got, c.end) {
				t.Fatalf("diagnosis %q, want %q … %q", got, c.start, c.end)
			}
		})
	}
}
