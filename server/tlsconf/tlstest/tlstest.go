// Package tlstest makes throwaway certificate authorities, certificates
// and key stores for tests of zkbridge's TLS ports. Nothing it makes is
// meant to outlive a test: keys are generated fresh each run and written
// to the test's temporary directory only.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// CA is a certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA makes a self-signed CA named cn, valid from an hour ago for a day.
func NewCA(cn string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n
}

// Leaf is an issued certificate and its key.
type Leaf struct {
	Cert  *x509.Certificate
	Key   *ecdsa.PrivateKey
	Chain []*x509.Certificate // the issuing CA
}

// Options shape an issued certificate.
type Options struct {
	// CN is the common name, used when RawSubject is nil.
	CN string
	// RawSubject is a DER-encoded subject (see Name), for subjects Go's
	// pkix.Name cannot express: repeated single-valued RDNs, IA5String.
	RawSubject []byte
	// NotBefore/NotAfter default to an hour ago and a day from now.
	NotBefore, NotAfter time.Time
	// IPs and DNSNames go into the subject alternative names; by default
	// 127.0.0.1 and localhost.
	IPs      []net.IP
	DNSNames []string
}

// Issue signs a leaf certificate usable by servers and clients.
func (ca *CA) Issue(o Options) (*Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if o.NotBefore.IsZero() {
		o.NotBefore = time.Now().Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = time.Now().Add(24 * time.Hour)
	}
	if o.IPs == nil && o.DNSNames == nil {
		o.IPs = []net.IP{net.IPv4(127, 0, 0, 1)}
		o.DNSNames = []string{"localhost"}
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: o.CN},
		RawSubject:   o.RawSubject,
		NotBefore:    o.NotBefore,
		NotAfter:     o.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  o.IPs,
		DNSNames:     o.DNSNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Leaf{Cert: cert, Key: key, Chain: []*x509.Certificate{ca.Cert}}, nil
}

// AVA is one attribute of a subject: its OID, the ASN.1 string tag to
// encode the value with, and the value.
type AVA struct {
	OID   asn1.ObjectIdentifier
	Tag   int
	Value string
}

// Common attribute OIDs.
var (
	OIDCountry      = asn1.ObjectIdentifier{2, 5, 4, 6}
	OIDOrganization = asn1.ObjectIdentifier{2, 5, 4, 10}
	OIDOrgUnit      = asn1.ObjectIdentifier{2, 5, 4, 11}
	OIDCommonName   = asn1.ObjectIdentifier{2, 5, 4, 3}
	OIDEmail        = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
)

// Name encodes a subject: each argument is one RDN (usually one AVA), in
// certificate order (C first, CN last, as openssl -subj writes them).
func Name(rdns ...[]AVA) ([]byte, error) {
	type atv struct {
		Type  asn1.ObjectIdentifier
		Value asn1.RawValue
	}
	var seq []asn1.RawValue
	for _, rdn := range rdns {
		set := make([]atv, len(rdn))
		for i, a := range rdn {
			set[i] = atv{Type: a.OID, Value: asn1.RawValue{Class: asn1.ClassUniversal, Tag: a.Tag, Bytes: []byte(a.Value)}}
		}
		b, err := asn1.MarshalWithParams(set, "set")
		if err != nil {
			return nil, err
		}
		seq = append(seq, asn1.RawValue{FullBytes: b})
	}
	return asn1.Marshal(seq)
}

// WritePEMKeyStore writes l's key and chain to one PEM file (ZooKeeper's
// PEM key store) and returns its path.
func (l *Leaf) WritePEMKeyStore(dir, name string) (string, error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(l.Key)
	if err != nil {
		return "", err
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: l.Cert.Raw})...)
	for _, c := range l.Chain {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return writeFile(dir, name, out)
}

// WritePKCS12KeyStore writes l's key and chain as a password-protected
// PKCS12 file (modern encryption, as keytool and openssl 3 write it).
func (l *Leaf) WritePKCS12KeyStore(dir, name, password string) (string, error) {
	der, err := pkcs12.Modern.Encode(l.Key, l.Cert, l.Chain, password)
	if err != nil {
		return "", err
	}
	return writeFile(dir, name, der)
}

// WritePEM writes the CA certificate (a PEM trust store).
func (ca *CA) WritePEM(dir, name string) (string, error) {
	return writeFile(dir, name, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}))
}

// WritePKCS12TrustStore writes the CA certificate as a Java-style PKCS12
// trust store.
func (ca *CA) WritePKCS12TrustStore(dir, name, password string) (string, error) {
	der, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.Cert}, password)
	if err != nil {
		return "", err
	}
	return writeFile(dir, name, der)
}

// writeFile replaces dir/name atomically (a rename), as a careful
// operator rotating a certificate would.
func writeFile(dir, name string, data []byte) (string, error) {
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return "", fmt.Errorf("tlstest: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("tlstest: %w", err)
	}
	return path, nil
}
