package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"
)

func TestIssueVerifiesAgainstCA(t *testing.T) {
	ca, err := NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ca.Issue(Request{
		CommonName: "system:node:node1", Organization: []string{"system:nodes"},
		IPs: []net.IP{net.ParseIP("10.200.0.11")}, DNSNames: []string{"node1"},
		Client: true, Server: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM); err != nil {
		t.Fatalf("certificate and key do not match: %v", err)
	}
	block, _ := pem.Decode(p.CertPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("verify for usage %v: %v", usage, err)
		}
	}
	if err := cert.VerifyHostname("10.200.0.11"); err != nil {
		t.Errorf("IP SAN missing: %v", err)
	}
	if cert.Subject.Organization[0] != "system:nodes" {
		t.Errorf("organization = %v", cert.Subject.Organization)
	}

	other, _ := NewCA("other-ca")
	foreign := x509.NewCertPool()
	foreign.AppendCertsFromPEM(other.CertPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: foreign, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err == nil {
		t.Error("certificate verified against an unrelated CA")
	}
}

func TestClientOnlyCertificateIsNotServing(t *testing.T) {
	ca, _ := NewCA("test-ca")
	p, err := ca.Issue(Request{CommonName: "admin", Organization: []string{"system:masters"}, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(p.CertPEM)
	cert, _ := x509.ParseCertificate(block.Bytes)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("client certificate accepted for server auth")
	}
}

func TestLoadCAIssuesVerifiableCertificates(t *testing.T) {
	orig, _ := NewCA("test-ca")
	ca, err := LoadCA(orig.CertPEM, orig.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ca.Issue(Request{CommonName: "later", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(p.CertPEM)
	cert, _ := x509.ParseCertificate(block.Bytes)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(orig.CertPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("certificate from a reloaded CA does not verify: %v", err)
	}
	if _, err := LoadCA([]byte("junk"), orig.KeyPEM); err == nil {
		t.Error("junk certificate accepted")
	}
}
