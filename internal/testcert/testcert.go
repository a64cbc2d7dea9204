// Package testcert makes TLS certificates for tests: a self-signed
// certificate authority and the server and client certificates it signs,
// as PEM, as brokers and the relay read them from files. Keys are ECDSA
// P-256 in PKCS #8, which Go, kfake and Apache Kafka's PEM key stores
// all accept.
package testcert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a self-signed certificate authority, valid for a day.
type CA struct {
	// CertPEM is the CA's certificate, the bundle a client trusts.
	CertPEM []byte
	cert    *x509.Certificate
	key     crypto.Signer
}

// Pair is a certificate with its private key.
type Pair struct {
	// CertPEM is the certificate followed by the CA's: the chain a server
	// or client presents.
	CertPEM []byte
	// KeyPEM is the private key, "PRIVATE KEY" (PKCS #8), unencrypted.
	KeyPEM []byte
}

// NewCA makes a certificate authority named name.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := template(name)
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("make CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{CertPEM: pemBlock("CERTIFICATE", der), cert: cert, key: key}, nil
}

// Pool is a certificate pool holding the CA, for a Go client or server
// that trusts it.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Server makes a server certificate valid for hosts, each a DNS name or
// an IP address.
func (ca *CA) Server(hosts ...string) (Pair, error) {
	tmpl := template(hosts[0])
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	return ca.sign(tmpl)
}

// Client makes a client certificate whose subject's common name is name
// (Kafka's principal, User:CN=name, with the default mapping rules).
func (ca *CA) Client(name string) (Pair, error) {
	tmpl := template(name)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.sign(tmpl)
}

func (ca *CA) sign(tmpl *x509.Certificate) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return Pair{}, fmt.Errorf("sign certificate for %s: %w", tmpl.Subject.CommonName, err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	chain := append(pemBlock("CERTIFICATE", der), ca.CertPEM...)
	return Pair{CertPEM: chain, KeyPEM: pemBlock("PRIVATE KEY", pkcs8)}, nil
}

// TLS is the pair as a tls.Certificate.
func (p Pair) TLS() (tls.Certificate, error) { return tls.X509KeyPair(p.CertPEM, p.KeyPEM) }

// WriteFiles writes the certificate and the key to dir as name.crt and
// name.key, readable by the owner only, and returns their paths.
func (p Pair) WriteFiles(dir, name string) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, p.CertPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, p.KeyPEM, 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

func template(cn string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
	}
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
