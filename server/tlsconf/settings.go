package tlsconf

import (
	"crypto/tls"
	"fmt"
	"path/filepath"
	"strings"
)

// Store names a key store or a trust store as ZooKeeper's
// ssl.keyStore.* / ssl.trustStore.* keys do.
type Store struct {
	// Location is the store's file.
	Location string `yaml:"location"`
	// Password opens a PKCS12 store (and an encrypted PEM key).
	Password string `yaml:"password"`
	// Type is PEM, PKCS12 or JKS; empty: inferred from the file's
	// extension (.pem, .p12/.pfx, .jks), as ZooKeeper does.
	Type string `yaml:"type"`
}

// Settings are the TLS settings of one family of ports: ZooKeeper's ssl.*
// for client-facing ports, ssl.quorum.* for the Raft peers.
type Settings struct {
	KeyStore   Store `yaml:"key_store"`
	TrustStore Store `yaml:"trust_store"`
	// ClientAuth is none, want or need (ssl.clientAuth); empty means need,
	// ZooKeeper's default.
	ClientAuth string `yaml:"client_auth"`
	// Protocol is ssl.protocol (TLSv1.2, TLSv1.3). Set alone, it is the
	// only version enabled, as in ZooKeeper. Unset (and EnabledProtocols
	// unset): TLS 1.2 and 1.3, so ZooKeeper 3.8's TLS 1.2-only Java
	// clients and newer ones both connect.
	Protocol string `yaml:"protocol"`
	// EnabledProtocols is ssl.enabledProtocols.
	EnabledProtocols []string `yaml:"enabled_protocols"`
	// CipherSuites is ssl.ciphersuites, IANA names as Java spells them
	// (TLS 1.2 suites; TLS 1.3 suites are not configurable in Go).
	CipherSuites []string `yaml:"cipher_suites"`
	// HostnameVerificationDisabled is ssl.hostnameVerification=false: a
	// dialer (a peer, the CLI) does not check the server certificate's
	// names against the address it dialed. ZooKeeper's default is on.
	HostnameVerificationDisabled bool `yaml:"hostname_verification_disabled"`
}

// Enabled reports whether a key store is configured: without one no TLS
// listener can be opened.
func (s Settings) Enabled() bool { return s.KeyStore.Location != "" }

// Client-authentication modes (ssl.clientAuth).
const (
	ClientAuthNone = "none"
	ClientAuthWant = "want"
	ClientAuthNeed = "need"
)

// clientAuth maps ssl.clientAuth to Go's mode. Asking for a certificate
// needs a trust store to verify it against.
func (s Settings) clientAuth() (tls.ClientAuthType, error) {
	switch strings.ToLower(s.ClientAuth) {
	case "", ClientAuthNeed:
		return tls.RequireAndVerifyClientCert, nil
	case ClientAuthWant:
		return tls.VerifyClientCertIfGiven, nil
	case ClientAuthNone:
		return tls.NoClientCert, nil
	}
	return 0, fmt.Errorf("ssl.clientAuth %q: want none, want or need", s.ClientAuth)
}

var protocolVersions = map[string]uint16{
	"tlsv1":   tls.VersionTLS10,
	"tlsv1.0": tls.VersionTLS10,
	"tlsv1.1": tls.VersionTLS11,
	"tlsv1.2": tls.VersionTLS12,
	"tlsv1.3": tls.VersionTLS13,
	// Java's generic names enable its newest versions.
	"tls": tls.VersionTLS13,
}

// versions returns the minimum and maximum TLS version enabled.
func (s Settings) versions() (uint16, uint16, error) {
	names := s.EnabledProtocols
	if len(names) == 0 && s.Protocol != "" {
		names = []string{s.Protocol}
	}
	if len(names) == 0 {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	var lo, hi uint16
	for _, n := range names {
		v, ok := protocolVersions[strings.ToLower(strings.TrimSpace(n))]
		if !ok {
			return 0, 0, fmt.Errorf("TLS protocol %q: want TLSv1.2 or TLSv1.3", n)
		}
		if strings.EqualFold(strings.TrimSpace(n), "TLS") {
			lo, hi = tls.VersionTLS12, tls.VersionTLS13
			continue
		}
		if lo == 0 || v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi, nil
}

// cipherSuites maps ssl.ciphersuites to Go's ids. Names Go does not
// implement (DHE suites, for one) are skipped and returned, so the caller
// can warn; none left is an error.
func (s Settings) cipherSuites() (ids []uint16, unknown []string, err error) {
	if len(s.CipherSuites) == 0 {
		return nil, nil, nil
	}
	byName := map[string]uint16{}
	for _, cs := range tls.CipherSuites() {
		byName[cs.Name] = cs.ID
	}
	for _, cs := range tls.InsecureCipherSuites() {
		byName[cs.Name] = cs.ID
	}
	for _, n := range s.CipherSuites {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if id, ok := byName[n]; ok {
			ids = append(ids, id)
		} else {
			unknown = append(unknown, n)
		}
	}
	if len(ids) == 0 {
		return nil, unknown, fmt.Errorf("ssl.ciphersuites: none of %v is a cipher suite zkbridge implements", s.CipherSuites)
	}
	return ids, unknown, nil
}

// storeType returns the store's type, upper case: the configured one or
// the one its extension implies.
func (st Store) storeType() string {
	if st.Type != "" {
		return strings.ToUpper(st.Type)
	}
	switch strings.ToLower(filepath.Ext(st.Location)) {
	case ".p12", ".pfx", ".pkcs12":
		return "PKCS12"
	case ".jks":
		return "JKS"
	case ".bcfks":
		return "BCFKS"
	}
	return "PEM"
}
