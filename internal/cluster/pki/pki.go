// Package pki issues the certificates and keys of a local cluster: one CA, serving and client
// certificates for every component, and the service-account signing key pair.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
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

// validity is long because local clusters are recreated, not renewed.
const validity = 10 * 365 * 24 * time.Hour

// CA signs every certificate of one cluster.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
	// CertPEM is the CA certificate that clients and servers trust.
	CertPEM []byte
	// KeyPEM is the CA key, needed by the controller-manager's CSR signer.
	KeyPEM []byte
}

// Request describes one certificate.
type Request struct {
	CommonName   string
	Organization []string
	IPs          []net.IP
	DNSNames     []string
	Client       bool
	Server       bool
}

// Pair is a PEM certificate and its PEM private key.
type Pair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// NewCA creates a self-signed CA.
func NewCA(commonName string) (*CA, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("create CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-sign CA %s: %w", commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA %s: %w", commonName, err)
	}
	return &CA{cert: cert, key: key, CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: keyPEM}, nil
}

// Issue signs a certificate for r with a fresh key.
func (ca *CA) Issue(r Request) (Pair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return Pair{}, fmt.Errorf("create key for %s: %w", r.CommonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return Pair{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: r.CommonName, Organization: r.Organization},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		IPAddresses:  r.IPs,
		DNSNames:     r.DNSNames,
	}
	if r.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	if r.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return Pair{}, fmt.Errorf("sign certificate for %s: %w", r.CommonName, err)
	}
	return Pair{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: keyPEM}, nil
}

// NewServiceAccountKey returns a signing key pair for service-account tokens (ES256).
func NewServiceAccountKey() (Pair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return Pair{}, fmt.Errorf("create service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return Pair{}, fmt.Errorf("encode service-account public key: %w", err)
	}
	return Pair{CertPEM: pemBlock("PUBLIC KEY", pub), KeyPEM: keyPEM}, nil
}

// Write stores p as dir/base.crt and dir/base.key (the key readable by root only).
func (p Pair) Write(dir, base string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, base+".crt"), p.CertPEM, 0o644); err != nil {
		return fmt.Errorf("write %s certificate: %w", base, err)
	}
	if err := os.WriteFile(filepath.Join(dir, base+".key"), p.KeyPEM, 0o600); err != nil {
		return fmt.Errorf("write %s key: %w", base, err)
	}
	return nil
}

// ECDSA P-256 keys take microseconds to generate, where RSA-2048 would add seconds to create.
func newKey() (crypto.Signer, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, pemBlock("EC PRIVATE KEY", der), nil
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("create serial number: %w", err)
	}
	return serial, nil
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

// LoadCA reads a CA written by Pair.Write, to issue more certificates for an existing cluster.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("load CA: expected PEM certificate and key")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("load CA certificate: %w", err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("load CA key: %w", err)
	}
	return &CA{cert: cert, key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}
