package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is a throwaway CA with one server and one client certificate, as
// PEM files in a directory.
type PKI struct {
	CAFile                      string
	ServerCert, ServerKey       string
	ClientCert, ClientKey       string
	OtherCAFile                 string // a CA that signed nothing here: a wrong --etcd-cacert
	OtherClient, OtherClientKey string // a client certificate from OtherCA
}

type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewPKI writes the files into dir. Certificates are valid for an hour;
// the server's for 127.0.0.1 and localhost.
func NewPKI(dir string) (*PKI, error) {
	p := &PKI{}
	ca, err := newCA("fencegate test CA")
	if err != nil {
		return nil, err
	}
	other, err := newCA("unrelated CA")
	if err != nil {
		return nil, err
	}
	write := func(name string, typ string, der []byte) (string, error) {
		path := filepath.Join(dir, name)
		return path, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
	}
	if p.CAFile, err = write("ca.pem", "CERTIFICATE", ca.cert.Raw); err != nil {
		return nil, err
	}
	if p.OtherCAFile, err = write("other-ca.pem", "CERTIFICATE", other.cert.Raw); err != nil {
		return nil, err
	}
	leaf := func(iss issuer, name string, server bool, certFile, keyFile string) (string, string, error) {
		der, key, err := iss.sign(name, server)
		if err != nil {
			return "", "", err
		}
		c, err := write(certFile, "CERTIFICATE", der)
		if err != nil {
			return "", "", err
		}
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return "", "", err
		}
		k, err := write(keyFile, "EC PRIVATE KEY", kb)
		return c, k, err
	}
	if p.ServerCert, p.ServerKey, err = leaf(ca, "etcd-server", true, "server.pem", "server-key.pem"); err != nil {
		return nil, err
	}
	if p.ClientCert, p.ClientKey, err = leaf(ca, "fencegate", false, "client.pem", "client-key.pem"); err != nil {
		return nil, err
	}
	if p.OtherClient, p.OtherClientKey, err = leaf(other, "fencegate", false, "other-client.pem", "other-client-key.pem"); err != nil {
		return nil, err
	}
	return p, nil
}

func newCA(name string) (issuer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return issuer{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return issuer{}, err
	}
	cert, err := x509.ParseCertificate(der)
	return issuer{cert: cert, key: key}, err
}

func (i issuer) sign(cn string, server bool) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, i.cert, &key.PublicKey, i.key)
	return der, key, err
}
