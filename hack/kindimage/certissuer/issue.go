package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1" //nolint:gosec // subject key identifier, as RFC 5280 4.2.1.2 method 1
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"time"
)

// CertSpec is the part of a cert-manager.io/v1 Certificate's spec this
// issuer honours.
type CertSpec struct {
	CommonName    string
	DNSNames      []string
	IPAddresses   []string
	URIs          []string
	Organizations []string
	Duration      time.Duration
	IsCA          bool
	Usages        []string
	KeyAlgorithm  string // RSA (default), ECDSA, Ed25519
	KeySize       int
}

// DefaultDuration is cert-manager's default certificate lifetime.
const DefaultDuration = 90 * 24 * time.Hour

// Issued is a key and certificate, PEM-encoded, and the CA that signed it.
type Issued struct {
	Cert, Key, CA []byte
	NotBefore     time.Time
	NotAfter      time.Time
}

// Signer is a CA: self-signed certificates have none.
type Signer struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	PEM  []byte
}

// ParseSigner reads a CA from the tls.crt and tls.key of a Secret.
func ParseSigner(certPEM, keyPEM []byte) (*Signer, error) {
	b, _ := pem.Decode(certPEM)
	if b == nil {
		return nil, errors.New("tls.crt holds no PEM block")
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, err
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("tls.key holds no PEM block")
	}
	key, err := parseKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	return &Signer{Cert: cert, Key: key, PEM: certPEM}, nil
}

func parseKey(der []byte) (crypto.Signer, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return nil, errors.New("tls.key: unsupported private key")
}

func newKey(spec CertSpec) (crypto.Signer, error) {
	switch spec.KeyAlgorithm {
	case "", "RSA":
		size := spec.KeySize
		if size == 0 {
			size = 2048
		}
		return rsa.GenerateKey(rand.Reader, size)
	case "ECDSA":
		curve := elliptic.P256()
		switch spec.KeySize {
		case 384:
			curve = elliptic.P384()
		case 521:
			curve = elliptic.P521()
		}
		return ecdsa.GenerateKey(curve, rand.Reader)
	case "Ed25519":
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	}
	return nil, fmt.Errorf("unsupported privateKey.algorithm %q", spec.KeyAlgorithm)
}

var usages = map[string]x509.KeyUsage{
	"signing": x509.KeyUsageDigitalSignature, "digital signature": x509.KeyUsageDigitalSignature,
	"content commitment": x509.KeyUsageContentCommitment, "key encipherment": x509.KeyUsageKeyEncipherment,
	"key agreement": x509.KeyUsageKeyAgreement, "data encipherment": x509.KeyUsageDataEncipherment,
	"cert sign": x509.KeyUsageCertSign, "crl sign": x509.KeyUsageCRLSign,
}

var extUsages = map[string]x509.ExtKeyUsage{
	"server auth": x509.ExtKeyUsageServerAuth, "client auth": x509.ExtKeyUsageClientAuth,
	"code signing": x509.ExtKeyUsageCodeSigning, "email protection": x509.ExtKeyUsageEmailProtection,
	"timestamping": x509.ExtKeyUsageTimeStamping, "ocsp signing": x509.ExtKeyUsageOCSPSigning,
	"any": x509.ExtKeyUsageAny,
}

// Issue makes a key and a certificate for spec, signed by ca, or by itself
// when ca is nil (cert-manager's selfSigned issuer).
func Issue(spec CertSpec, ca *Signer, now time.Time) (*Issued, error) {
	key, err := newKey(spec)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	ski := sha1.Sum(pubDER) //nolint:gosec
	d := spec.Duration
	if d <= 0 {
		d = DefaultDuration
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: spec.CommonName, Organization: spec.Organizations},
		DNSNames:              spec.DNSNames,
		NotBefore:             now.Add(-time.Minute).UTC(),
		NotAfter:              now.Add(d).UTC(),
		SubjectKeyId:          ski[:],
		BasicConstraintsValid: true,
		IsCA:                  spec.IsCA,
	}
	for _, ip := range spec.IPAddresses {
		p := net.ParseIP(ip)
		if p == nil {
			return nil, fmt.Errorf("ipAddresses: %q is no IP address", ip)
		}
		tmpl.IPAddresses = append(tmpl.IPAddresses, p)
	}
	for _, u := range spec.URIs {
		p, err := url.Parse(u)
		if err != nil {
			return nil, fmt.Errorf("uris: %w", err)
		}
		tmpl.URIs = append(tmpl.URIs, p)
	}
	us := spec.Usages
	if len(us) == 0 {
		us = []string{"digital signature", "key encipherment"} // cert-manager's default
	}
	for _, u := range us {
		if k, ok := usages[u]; ok {
			tmpl.KeyUsage |= k
		} else if e, ok := extUsages[u]; ok {
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, e)
		} else {
			return nil, fmt.Errorf("unsupported usage %q", u)
		}
	}
	if spec.IsCA {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	if _, isRSA := key.(*rsa.PrivateKey); !isRSA {
		tmpl.KeyUsage &^= x509.KeyUsageKeyEncipherment // only RSA keys encipher
	}
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.Cert, ca.Key
		if tmpl.NotAfter.After(ca.Cert.NotAfter) {
			tmpl.NotAfter = ca.Cert.NotAfter
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	out := &Issued{
		Cert:      pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:       pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		NotBefore: tmpl.NotBefore, NotAfter: tmpl.NotAfter,
	}
	out.CA = out.Cert
	if ca != nil {
		out.CA = ca.PEM
	}
	return out, nil
}

// NeedsRenewal says whether a certificate in PEM is unreadable or has used
// two thirds of its lifetime (cert-manager's default renewBefore).
func NeedsRenewal(certPEM []byte, now time.Time) bool {
	b, _ := pem.Decode(certPEM)
	if b == nil {
		return true
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return true
	}
	life := c.NotAfter.Sub(c.NotBefore)
	return now.After(c.NotAfter.Add(-life / 3))
}

// b64 is a caBundle as an unstructured object holds it.
func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
