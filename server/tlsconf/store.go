package tlsconf

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"software.sslmate.com/src/go-pkcs12"
)

// ErrJKS is returned for a JKS store: there is no maintained Go reader of
// Java's proprietary format, so it has to be converted once.
var ErrJKS = errors.New("JKS stores are not supported")

// jksError says how to convert a JKS store to PKCS12, which ZooKeeper
// reads too, so one converted store serves both.
func jksError(st Store, what string) error {
	return fmt.Errorf("%s %s: %w; convert it to PKCS12 (ZooKeeper reads that too) and set its type to PKCS12:\n"+
		"  keytool -importkeystore -srckeystore %s -srcstoretype JKS -destkeystore %s.p12 -deststoretype PKCS12",
		what, st.Location, ErrJKS, st.Location, trimExt(st.Location))
}

func trimExt(p string) string {
	for i := len(p) - 1; i >= 0 && p[i] != '/'; i-- {
		if p[i] == '.' {
			return p[:i]
		}
	}
	return p
}

// LoadKeyStore reads a key store: a private key and its certificate chain.
// A PEM key store is one file holding both (ZooKeeper's format).
func LoadKeyStore(st Store) (tls.Certificate, error) {
	raw, err := os.ReadFile(st.Location)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("key store: %w", err)
	}
	var key crypto.PrivateKey
	var chain []*x509.Certificate
	switch t := st.storeType(); t {
	case "PEM":
		key, chain, err = parsePEMKeyStore(raw)
	case "PKCS12":
		var leaf *x509.Certificate
		var cas []*x509.Certificate
		key, leaf, cas, err = pkcs12.DecodeChain(raw, st.Password)
		chain = append([]*x509.Certificate{leaf}, cas...)
	case "JKS":
		return tls.Certificate{}, jksError(st, "key store")
	default:
		return tls.Certificate{}, fmt.Errorf("key store %s: type %q is not supported; use PEM or PKCS12", st.Location, t)
	}
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("key store %s: %w", st.Location, err)
	}
	cert := tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	if !publicKeyMatches(key, chain[0]) {
		return tls.Certificate{}, fmt.Errorf("key store %s: the private key does not belong to the certificate %q", st.Location, JavaDN(chain[0]))
	}
	return cert, nil
}

func parsePEMKeyStore(raw []byte) (crypto.PrivateKey, []*x509.Certificate, error) {
	var key crypto.PrivateKey
	var chain []*x509.Certificate
	for {
		var b *pem.Block
		b, raw = pem.Decode(raw)
		if b == nil {
			break
		}
		switch b.Type {
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, nil, fmt.Errorf("certificate: %w", err)
			}
			chain = append(chain, c)
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
			if key != nil {
				return nil, nil, errors.New("more than one private key")
			}
			k, err := parsePrivateKey(b)
			if err != nil {
				return nil, nil, err
			}
			key = k
		case "ENCRYPTED PRIVATE KEY":
			return nil, nil, errors.New("encrypted PEM private keys are not supported; decrypt it (openssl pkcs8 -topk8 -nocrypt -in KEY) or use a PKCS12 store with a password")
		}
	}
	if key == nil {
		return nil, nil, errors.New("no private key (a PEM key store holds the key and its certificate chain in one file)")
	}
	if len(chain) == 0 {
		return nil, nil, errors.New("no certificate (a PEM key store holds the key and its certificate chain in one file)")
	}
	return key, chain, nil
}

func parsePrivateKey(b *pem.Block) (crypto.PrivateKey, error) {
	switch b.Type {
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(b.Bytes)
	}
	return x509.ParsePKCS8PrivateKey(b.Bytes)
}

func publicKeyMatches(key crypto.PrivateKey, cert *x509.Certificate) bool {
	type publicKeyer interface{ Public() crypto.PublicKey }
	pk, ok := key.(publicKeyer)
	if !ok {
		return false
	}
	switch pub := pk.Public().(type) {
	case *rsa.PublicKey:
		return pub.Equal(cert.PublicKey)
	case *ecdsa.PublicKey:
		return pub.Equal(cert.PublicKey)
	case ed25519.PublicKey:
		return pub.Equal(cert.PublicKey)
	}
	return false
}

// LoadTrustStore reads a trust store: the CA certificates that peers'
// certificates must chain to. PKCS12 trust stores written by keytool
// (trusted-certificate entries) and by openssl (plain certificate bags)
// both load.
func LoadTrustStore(st Store) (*x509.CertPool, []*x509.Certificate, error) {
	raw, err := os.ReadFile(st.Location)
	if err != nil {
		return nil, nil, fmt.Errorf("trust store: %w", err)
	}
	var certs []*x509.Certificate
	switch t := st.storeType(); t {
	case "PEM":
		for {
			var b *pem.Block
			b, raw = pem.Decode(raw)
			if b == nil {
				break
			}
			if b.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, nil, fmt.Errorf("trust store %s: %w", st.Location, err)
			}
			certs = append(certs, c)
		}
	case "PKCS12":
		// keytool's trust stores: trusted-certificate entries.
		certs, err = pkcs12.DecodeTrustStore(raw, st.Password)
		if err != nil {
			// A key store used as a trust store (ZooKeeper allows it):
			// its certificates are the anchors.
			_, leaf, cas, kerr := pkcs12.DecodeChain(raw, st.Password)
			if kerr != nil {
				return nil, nil, fmt.Errorf("trust store %s: %w", st.Location, err)
			}
			certs = append([]*x509.Certificate{leaf}, cas...)
		}
	case "JKS":
		return nil, nil, jksError(st, "trust store")
	default:
		return nil, nil, fmt.Errorf("trust store %s: type %q is not supported; use PEM or PKCS12", st.Location, t)
	}
	if len(certs) == 0 {
		return nil, nil, fmt.Errorf("trust store %s: no certificates", st.Location)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, certs, nil
}
