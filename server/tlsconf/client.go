package tlsconf

import (
	"crypto/tls"
	"fmt"
)

// ClientFiles are a command-line client's TLS files (the CLI's --tls-*
// flags, the bench tool's).
type ClientFiles struct {
	// CA is the trust store the server's certificate must chain to (PEM
	// or PKCS12); empty: the system's CAs.
	CA string
	// Cert is the client's key store: a PEM file with key and chain
	// (ZooKeeper's format) or PKCS12; or, with Key, the certificate alone.
	Cert string
	// Key is the private key in PEM when Cert holds only certificates.
	Key string
	// Password opens PKCS12 stores.
	Password string
	// SkipHostnameVerification checks the chain but not that the
	// certificate names the host dialed (ssl.hostnameVerification=false).
	SkipHostnameVerification bool
}

// Config returns the client TLS configuration. ServerName is left empty:
// the dialer fills in the host it dials.
func (f ClientFiles) Config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		pool, _, err := LoadTrustStore(Store{Location: f.CA, Password: f.Password})
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	switch {
	case f.Cert != "" && f.Key != "":
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s with key %s: %w", f.Cert, f.Key, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case f.Cert != "":
		cert, err := LoadKeyStore(Store{Location: f.Cert, Password: f.Password})
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case f.Key != "":
		return nil, fmt.Errorf("a client key (%s) needs its certificate too", f.Key)
	}
	if f.SkipHostnameVerification {
		cfg.InsecureSkipVerify = true // the chain is still verified
		cfg.VerifyPeerCertificate = VerifyChainOnly(cfg.RootCAs)
	}
	return cfg, nil
}
