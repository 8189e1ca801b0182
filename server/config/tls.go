package config

import (
	"fmt"
	"net"
	"strings"

	"github.com/zkbridge/zkbridge/server/tlsconf"
)

// TLSConfig is everything TLS and x509 about a node: ZooKeeper's ssl.*
// and ssl.quorum.* keys, secureClientPort and client.portUnification.
type TLSConfig struct {
	// SecureClientAddr is a TLS-only client listener beside ClientAddr
	// (secureClientPort); empty: none.
	SecureClientAddr string `yaml:"secure_client_addr"`
	// ClientPortTLS makes ClientAddr itself TLS-only: a zoo.cfg with a
	// secureClientPort and no clientPort.
	ClientPortTLS bool `yaml:"client_port_tls"`
	// PortUnification lets ClientAddr take TLS and plaintext clients alike
	// (client.portUnification=true), told apart by the first byte.
	PortUnification bool `yaml:"port_unification"`
	// Client is ssl.*: the secure client port's stores and options, also
	// used by the native gRPC port and, with AdminHTTPS, the admin port.
	Client tlsconf.Settings `yaml:"ssl"`
	// QuorumEnabled is sslQuorum=true: Raft peers talk mutual TLS with
	// Quorum's stores.
	QuorumEnabled bool             `yaml:"ssl_quorum_enabled"`
	Quorum        tlsconf.Settings `yaml:"ssl_quorum"`
	// NativePlaintext keeps the native gRPC port plaintext although ssl.*
	// has a key store (by default it then serves TLS).
	NativePlaintext bool `yaml:"native_plaintext"`
	// AdminHTTPS serves the admin HTTP port over TLS (admin.forceHttps).
	AdminHTTPS bool `yaml:"admin_https"`
	// X509SuperUser is the client certificate DN (Java RFC 2253 form) that
	// bypasses every ACL (zookeeper.X509AuthenticationProvider.superUser).
	X509SuperUser string `yaml:"x509_super_user"`
	// TenantUnknownIdentity is what a TLS client of the node's secure port
	// whose server name (SNI) and certificate name no tenant gets:
	// "default" (or empty), the default tenant serves it; "refuse", it is
	// closed with a log line.
	TenantUnknownIdentity string `yaml:"tenant_unknown_identity"`
}

// Unknown TLS identities on a shared secure port (TenantUnknownIdentity).
const (
	UnknownIdentityDefault = "default"
	UnknownIdentityRefuse  = "refuse"
)

// ClientTLSEnabled reports whether any client port takes TLS.
func (t TLSConfig) ClientTLSEnabled() bool {
	return t.SecureClientAddr != "" || t.ClientPortTLS || t.PortUnification
}

// NativeTLS reports whether the native gRPC port serves TLS: whenever
// ssl.* has a key store, unless NativePlaintext.
func (t TLSConfig) NativeTLS() bool { return t.Client.Enabled() && !t.NativePlaintext }

func (t TLSConfig) validate(c *Config) error {
	if t.SecureClientAddr != "" {
		if _, _, err := net.SplitHostPort(t.SecureClientAddr); err != nil {
			return fmt.Errorf("config: secure client address %q: %w", t.SecureClientAddr, err)
		}
	}
	if t.ClientPortTLS && t.PortUnification {
		return fmt.Errorf("config: client.portUnification needs a plaintext clientPort to unify with the TLS one")
	}
	if (t.ClientTLSEnabled() || t.AdminHTTPS) && !t.Client.Enabled() {
		return fmt.Errorf("config: TLS on a client port needs ssl.keyStore.location (a PEM or PKCS12 key store)")
	}
	switch t.TenantUnknownIdentity {
	case "", UnknownIdentityDefault, UnknownIdentityRefuse:
	default:
		return fmt.Errorf("config: tenant unknown identity %q: want %s or %s", t.TenantUnknownIdentity, UnknownIdentityDefault, UnknownIdentityRefuse)
	}
	if t.QuorumEnabled && !t.Quorum.Enabled() {
		return fmt.Errorf("config: sslQuorum=true needs ssl.quorum.keyStore.location and ssl.quorum.trustStore.location")
	}
	return nil
}

// zooCfgTLSKeys are the zoo.cfg keys zooCfgTLS reads (each also with
// ZooKeeper's "zookeeper." system-property prefix).
var zooCfgTLSKeys = map[string]bool{
	"secureClientPort": true, "secureClientPortAddress": true, "client.portUnification": true,
	"sslQuorum": true, "sslQuorumReloadCertFiles": true, "serverCnxnFactory": true,
	"admin.forceHttps": true, "admin.portUnification": true,
	"authProvider.x509": true, "X509AuthenticationProvider.superUser": true,
	"zkbridge.native.plaintext": true,
}

// sslKeys are the ssl.<key> (and ssl.quorum.<key>) suffixes.
var sslKeys = map[string]bool{
	"keyStore.location": true, "keyStore.password": true, "keyStore.type": true,
	"trustStore.location": true, "trustStore.password": true, "trustStore.type": true,
	"clientAuth": true, "protocol": true, "enabledProtocols": true, "ciphersuites": true,
	"hostnameVerification": true,
	// accepted, not used (see zooCfgTLS)
	"authProvider": true, "handshakeDetectionTimeoutMillis": true, "sslProvider": true,
	"ocsp": true, "crl": true, "clientHostnameVerification": true, "context.supplier.class": true,
	"keyStore.passwordPath": true, "trustStore.passwordPath": true,
}

func isZooCfgTLSKey(k string) bool {
	k = strings.TrimPrefix(k, "zookeeper.")
	if zooCfgTLSKeys[k] {
		return true
	}
	if rest, ok := strings.CutPrefix(k, "ssl.quorum."); ok {
		return sslKeys[rest]
	}
	if rest, ok := strings.CutPrefix(k, "ssl."); ok {
		return sslKeys[rest]
	}
	return false
}

// zooCfgTLS reads the TLS keys of a zoo.cfg. clientHost is the
// clientPortAddress (or the default host); relative store paths are
// resolved against dir, the file's directory, as dataDir is.
func (c *Config) zooCfgTLS(props map[string]string, clientHost, dir string) error {
	get := func(k string) (string, bool) {
		if v, ok := props[k]; ok {
			return v, true
		}
		v, ok := props["zookeeper."+k]
		return v, ok
	}
	boolean := func(k string) (bool, error) {
		v, ok := get(k)
		if !ok {
			return false, nil
		}
		switch strings.ToLower(v) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return false, fmt.Errorf("zoo.cfg %s=%q: want true or false", k, v)
	}
	t := &c.TLS
	if port, ok := get("secureClientPort"); ok {
		host := clientHost
		if h, ok := get("secureClientPortAddress"); ok {
			host = h
		}
		addr := net.JoinHostPort(host, port)
		if _, plain := props["clientPort"]; plain {
			t.SecureClientAddr = addr
		} else {
			// TLS only, as a ZooKeeper with no clientPort.
			c.ClientAddr = addr
			t.ClientPortTLS = true
		}
	}
	var err error
	if t.PortUnification, err = boolean("client.portUnification"); err != nil {
		return err
	}
	if t.QuorumEnabled, err = boolean("sslQuorum"); err != nil {
		return err
	}
	if t.AdminHTTPS, err = boolean("admin.forceHttps"); err != nil {
		return err
	}
	if t.NativePlaintext, err = boolean("zkbridge.native.plaintext"); err != nil {
		return err
	}
	if v, ok := get("X509AuthenticationProvider.superUser"); ok {
		t.X509SuperUser = v
	}
	if t.Client, err = zooCfgSSL(get, "ssl.", &c.Warnings); err != nil {
		return err
	}
	if t.Quorum, err = zooCfgSSL(get, "ssl.quorum.", &c.Warnings); err != nil {
		return err
	}
	for _, p := range []*string{&t.Client.KeyStore.Location, &t.Client.TrustStore.Location, &t.Quorum.KeyStore.Location, &t.Quorum.TrustStore.Location} {
		if *p != "" {
			*p = resolve(dir, *p)
		}
	}
	if v, ok := get("serverCnxnFactory"); ok && !strings.HasSuffix(v, "NettyServerCnxnFactory") && t.ClientTLSEnabled() {
		c.Warnings = append(c.Warnings, fmt.Sprintf("zoo.cfg serverCnxnFactory=%s: ZooKeeper needs Netty for TLS; zkbridge serves TLS either way", v))
	}
	for _, k := range []string{"sslQuorumReloadCertFiles", "admin.portUnification"} {
		if _, ok := get(k); ok {
			c.Warnings = append(c.Warnings, fmt.Sprintf("zoo.cfg %s: accepted; zkbridge always reloads changed certificates and its admin port speaks one protocol", k))
		}
	}
	return nil
}

// zooCfgSSL reads one family of ssl keys (prefix "ssl." or "ssl.quorum.").
func zooCfgSSL(get func(string) (string, bool), prefix string, warnings *[]string) (tlsconf.Settings, error) {
	var s tlsconf.Settings
	str := func(k string, dst *string) {
		if v, ok := get(prefix + k); ok {
			*dst = v
		}
	}
	list := func(k string) []string {
		v, ok := get(prefix + k)
		if !ok {
			return nil
		}
		var out []string
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	str("keyStore.location", &s.KeyStore.Location)
	str("keyStore.password", &s.KeyStore.Password)
	str("keyStore.type", &s.KeyStore.Type)
	str("trustStore.location", &s.TrustStore.Location)
	str("trustStore.password", &s.TrustStore.Password)
	str("trustStore.type", &s.TrustStore.Type)
	str("clientAuth", &s.ClientAuth)
	str("protocol", &s.Protocol)
	s.EnabledProtocols = list("enabledProtocols")
	s.CipherSuites = list("ciphersuites")
	if v, ok := get(prefix + "hostnameVerification"); ok {
		switch strings.ToLower(v) {
		case "true":
		case "false":
			s.HostnameVerificationDisabled = true
		default:
			return s, fmt.Errorf("zoo.cfg %shostnameVerification=%q: want true or false", prefix, v)
		}
	}
	for _, k := range []string{"keyStore.passwordPath", "trustStore.passwordPath"} {
		if path, ok := get(prefix + k); ok {
			*warnings = append(*warnings, fmt.Sprintf("zoo.cfg %s%s=%s: not supported; set the password itself (%s%s)", prefix, k, path, prefix, strings.TrimSuffix(k, "Path")))
		}
	}
	for _, k := range []string{"authProvider", "handshakeDetectionTimeoutMillis", "sslProvider", "ocsp", "crl", "clientHostnameVerification", "context.supplier.class"} {
		if _, ok := get(prefix + k); ok {
			*warnings = append(*warnings, fmt.Sprintf("zoo.cfg %s%s: accepted, not used by zkbridge", prefix, k))
		}
	}
	return s, nil
}
