// Tests that identity comes only from a verified client certificate (SPIFFE
// URI SAN, else CN) or a known bearer token, that token files parse
// strictly, and that a bad credential is never excused by another method.
package httpapi

import (
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const (
	tokAlice = "alice-token-0123456789"
	tokAdmin = "admin-token-0123456789"
)

func TestParseTokenFile(t *testing.T) {
	good := []struct{ name, file string }{
		{"lines", "# dev tokens\n\n" + tokAlice + " alice\n" + tokAdmin + "\tspiffe://example.org/ops/admin\n"},
		{"json", `{"` + tokAlice + `": "alice", "` + tokAdmin + `": "spiffe://example.org/ops/admin"}`},
	}
	for _, c := range good {
		t.Run(c.name, func(t *testing.T) {
			a, err := ParseTokenFile([]byte(c.file))
			if err != nil {
				t.Fatal(err)
			}
			for tok, want := range map[string]string{tokAlice: "alice", tokAdmin: "spiffe://example.org/ops/admin"} {
				r := httptest.NewRequest("POST", "/v1/acquire", nil)
				r.Header.Set("Authorization", "Bearer "+tok)
				if got, err := a.Authenticate(r); err != nil || got != want {
					t.Errorf("token %s: got %q, %v; want %q", tok, got, err, want)
				}
			}
		})
	}
	bad := []struct{ name, file, want string }{
		{"empty", "# nothing\n", "no tokens"},
		{"short token", "short alice\n", "token is 5 bytes"},
		{"three fields", tokAlice + " alice extra\n", "got 3 fields"},
		{"bad identity", tokAlice + " Alice/x\n", "identity"},
		{"duplicate", tokAlice + " alice\n" + tokAlice + " bob\n", "duplicate"},
		{"json duplicate", `{"` + tokAlice + `": "alice", "` + tokAlice + `": "bob"}`, "duplicate"},
		{"json trailing", `{"` + tokAlice + `": "alice"} x`, "trailing"},
		{"json not string", `{"` + tokAlice + `": 7}`, "entry 1"},
		{"json unclosed", `{"` + tokAlice + `": "alice"`, "token file"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseTokenFile([]byte(c.file))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "httpapi: ") {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestTokenAuthRejects(t *testing.T) {
	a, err := ParseTokenFile([]byte(tokAlice + " alice\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		headers []string
		want    error
	}{
		{"none", nil, ErrNoCredentials},
		{"unknown", []string{"Bearer " + tokAdmin}, ErrBadCredentials},
		{"prefix of known", []string{"Bearer " + tokAlice[:len(tokAlice)-1]}, ErrBadCredentials},
		{"basic", []string{"Basic " + tokAlice}, ErrBadCredentials},
		{"empty bearer", []string{"Bearer "}, ErrBadCredentials},
		{"two headers", []string{"Bearer " + tokAlice, "Bearer " + tokAlice}, ErrBadCredentials},
	} {
		r := httptest.NewRequest("POST", "/v1/acquire", nil)
		for _, h := range c.headers {
			r.Header.Add("Authorization", h)
		}
		if id, err := a.Authenticate(r); !errors.Is(err, c.want) || id != "" {
			t.Errorf("%s: got %q, %v; want %v", c.name, id, err, c.want)
		}
	}
}

func TestChainBadCredentialIsNotExcused(t *testing.T) {
	tokens, _ := ParseTokenFile([]byte(tokAlice + " alice\n"))
	chain := Chain{CertAuth{}, tokens}
	r := httptest.NewRequest("POST", "/v1/acquire", nil)
	if _, err := chain.Authenticate(r); !errors.Is(err, ErrNoCredentials) {
		t.Fatalf("no credentials: %v", err)
	}
	r.Header.Set("Authorization", "Bearer wrong-token-0123456789")
	if _, err := chain.Authenticate(r); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("bad token: %v", err)
	}
	r.Header.Set("Authorization", "Bearer "+tokAlice)
	if id, err := chain.Authenticate(r); err != nil || id != "alice" {
		t.Fatalf("good token: %q, %v", id, err)
	}
}

// TestCertAuthOverRealTLS runs real mTLS handshakes with certificates made
// here and checks which identity each certificate yields.
func TestCertAuthOverRealTLS(t *testing.T) {
	ca, other := newTestCA(t, "fencegate test CA"), newTestCA(t, "untrusted CA")
	srvCert, _, _ := ca.issue(t, leafSpec{cn: "registry", server: true})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := CertAuth{}.Authenticate(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		io.WriteString(w, id)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{srvCert}, ClientCAs: ca.pool, ClientAuth: tls.VerifyClientCertIfGiven}
	srv.StartTLS()
	defer srv.Close()

	call := func(cert *tls.Certificate) (int, string, error) {
		cfg := &tls.Config{RootCAs: ca.pool}
		if cert != nil { // always sent, even when its CA is not one the server names
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := c.Get(srv.URL)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	for _, c := range []struct {
		name   string
		ca     *testCA
		spec   leafSpec
		status int
		body   string
	}{
		{"spiffe wins over CN", ca, leafSpec{cn: "ignored", uris: []string{"https://example.org/x", "spiffe://example.org/worker/settle-7"}}, 200, "spiffe://example.org/worker/settle-7"},
		{"CN when no SPIFFE", ca, leafSpec{cn: "worker-7", uris: []string{"https://example.org/x"}}, 200, "worker-7"},
		{"ed25519 client key", ca, leafSpec{cn: "worker-ed", ed25519: true}, 200, "worker-ed"},
		{"two SPIFFE IDs", ca, leafSpec{cn: "w", uris: []string{"spiffe://example.org/a", "spiffe://example.org/b"}}, 401, "2 SPIFFE IDs"},
		{"invalid CN", ca, leafSpec{cn: "not an owner"}, 401, "not allowed"},
		{"empty identity", ca, leafSpec{}, 401, "neither"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cert, _, _ := c.ca.issue(t, c.spec)
			status, body, err := call(&cert)
			if err != nil {
				t.Fatal(err)
			}
			if status != c.status || !strings.Contains(body, c.body) {
				t.Fatalf("got %d %q, want %d containing %q", status, body, c.status, c.body)
			}
		})
	}
	t.Run("no certificate", func(t *testing.T) {
		status, body, err := call(nil)
		if err != nil || status != 401 || !strings.Contains(body, "no credentials") {
			t.Fatalf("got %d %q %v", status, body, err)
		}
	})
	t.Run("untrusted CA fails the handshake", func(t *testing.T) {
		cert, _, _ := other.issue(t, leafSpec{cn: "mallory"})
		if _, _, err := call(&cert); err == nil {
			t.Fatal("handshake with a certificate from an untrusted CA succeeded")
		}
	})
}
