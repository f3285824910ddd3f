package zktest

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

// PKI is a throwaway CA with a server and a client certificate, as PEM
// files in a directory. Keys are PKCS#8, which ZooKeeper's PEM key store
// reads; ServerKeyStore holds the server's key and certificate together.
type PKI struct {
	CAFile                string
	ServerKeyStore        string
	ClientCert, ClientKey string
	OtherCAFile           string // a CA that signed nothing here
}

// NewPKI writes the files into dir. Certificates are valid for an hour;
// the server's for 127.0.0.1 and localhost.
func NewPKI(dir string) (*PKI, error) {
	ca, caKey, err := newCert(nil, nil, "zktest CA", certCA)
	if err != nil {
		return nil, err
	}
	other, _, err := newCert(nil, nil, "unrelated CA", certCA)
	if err != nil {
		return nil, err
	}
	p := &PKI{
		CAFile: filepath.Join(dir, "zk-ca.pem"), ServerKeyStore: filepath.Join(dir, "zk-server.pem"),
		ClientCert: filepath.Join(dir, "zk-client.pem"), ClientKey: filepath.Join(dir, "zk-client-key.pem"),
		OtherCAFile: filepath.Join(dir, "zk-other-ca.pem"),
	}
	srv, srvKey, err := newCert(ca, caKey, "zookeeper", certServer)
	if err != nil {
		return nil, err
	}
	cli, cliKey, err := newCert(ca, caKey, "fencegate", certClient)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		path   string
		blocks []*pem.Block
	}{
		{p.CAFile, []*pem.Block{certBlock(ca)}},
		{p.OtherCAFile, []*pem.Block{certBlock(other)}},
		{p.ServerKeyStore, []*pem.Block{keyBlock(srvKey), certBlock(srv)}},
		{p.ClientCert, []*pem.Block{certBlock(cli)}},
		{p.ClientKey, []*pem.Block{keyBlock(cliKey)}},
	} {
		var b []byte
		for _, bl := range f.blocks {
			if bl == nil {
				return nil, os.ErrInvalid
			}
			b = append(b, pem.EncodeToMemory(bl)...)
		}
		if err := os.WriteFile(f.path, b, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

type certKind int

const (
	certCA certKind = iota
	certServer
	certClient
)

// newCert makes a certificate of kind, self-signed when parent is nil.
func newCert(parent *x509.Certificate, parentKey *ecdsa.PrivateKey, cn string, kind certKind) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	switch kind {
	case certCA:
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	case certServer:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	case certClient:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func certBlock(c *x509.Certificate) *pem.Block {
	return &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}
}

func keyBlock(k *ecdsa.PrivateKey) *pem.Block {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil
	}
	return &pem.Block{Type: "PRIVATE KEY", Bytes: der}
}
