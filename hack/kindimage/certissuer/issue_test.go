package main

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"
)

func parse(t *testing.T, p []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(p)
	if b == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A self-signed serving certificate verifies against its own ca.crt for its
// DNS names, as a webhook's caBundle is used by the apiserver.
func TestSelfSignedServingCertificateVerifiesForItsNames(t *testing.T) {
	now := time.Now()
	out, err := Issue(CertSpec{DNSNames: []string{"svc.ns.svc", "svc.ns.svc.cluster.local"}, Organizations: []string{"flotilla.io"}}, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	cert := parse(t, out.Cert)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(out.CA) {
		t.Fatal("ca.crt is not a certificate")
	}
	for _, n := range []string{"svc.ns.svc", "svc.ns.svc.cluster.local"} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: n, Roots: roots, CurrentTime: now}); err != nil {
			t.Errorf("verify for %s: %v", n, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "other.ns.svc", Roots: roots, CurrentTime: now}); err == nil {
		t.Error("verified for a name it does not hold")
	}
	if got := cert.NotAfter.Sub(now); got < DefaultDuration-time.Minute || got > DefaultDuration+time.Minute {
		t.Errorf("lifetime %s, want cert-manager's default %s", got, DefaultDuration)
	}
	if NeedsRenewal(out.Cert, now) || !NeedsRenewal(out.Cert, now.Add(61*24*time.Hour)) {
		t.Error("renewal is due after two thirds of the lifetime, not before")
	}
}

// A ca issuer signs with the CA Secret's key; ca.crt is the CA, which is not
// the leaf.
func TestCAIssuerSignsWithItsSecret(t *testing.T) {
	now := time.Now()
	root, err := Issue(CertSpec{CommonName: "root", IsCA: true, KeyAlgorithm: "ECDSA", Duration: 24 * time.Hour}, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ParseSigner(root.Cert, root.Key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := Issue(CertSpec{CommonName: "client", Usages: []string{"digital signature", "client auth"}, Duration: 48 * time.Hour}, signer, now)
	if err != nil {
		t.Fatal(err)
	}
	if string(leaf.CA) != string(root.Cert) {
		t.Error("ca.crt is not the CA's certificate")
	}
	cert := parse(t, leaf.Cert)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(leaf.CA)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("verify client certificate: %v", err)
	}
	if cert.NotAfter.After(signer.Cert.NotAfter) {
		t.Error("the leaf outlives its CA")
	}
}

func TestUnknownUsageAndAlgorithmAreRefused(t *testing.T) {
	if _, err := Issue(CertSpec{Usages: []string{"teleport"}}, nil, time.Now()); err == nil {
		t.Error("unknown usage accepted")
	}
	if _, err := Issue(CertSpec{KeyAlgorithm: "DSA"}, nil, time.Now()); err == nil {
		t.Error("unknown algorithm accepted")
	}
}
