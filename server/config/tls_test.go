package config

import (
	"strings"
	"testing"
)

func TestZooCfgTLSKeys(t *testing.T) {
	cfg := `
clientPort=2181
secureClientPort=2281
secureClientPortAddress=0.0.0.0
client.portUnification=true
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
ssl.keyStore.location=/etc/zk/server.p12
ssl.keyStore.password=kspw
ssl.keyStore.type=PKCS12
ssl.trustStore.location=/etc/zk/ca.pem
ssl.trustStore.type=PEM
ssl.clientAuth=want
ssl.protocol=TLSv1.2
ssl.enabledProtocols=TLSv1.2,TLSv1.3
ssl.ciphersuites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
ssl.hostnameVerification=false
sslQuorum=true
sslQuorumReloadCertFiles=true
ssl.quorum.keyStore.location=/etc/zk/peer.pem
ssl.quorum.trustStore.location=/etc/zk/peer-ca.pem
zookeeper.ssl.quorum.clientAuth=need
authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider
X509AuthenticationProvider.superUser=CN=admin,O=Acme
admin.forceHttps=true
`
	c, err := ParseZooCfg([]byte(cfg), "")
	if err != nil {
		t.Fatal(err)
	}
	tc := c.TLS
	if c.ClientAddr != "127.0.0.1:2181" || tc.SecureClientAddr != "0.0.0.0:2281" || tc.ClientPortTLS || !tc.PortUnification {
		t.Errorf("ports: client %s secure %s tlsOnly %v unified %v", c.ClientAddr, tc.SecureClientAddr, tc.ClientPortTLS, tc.PortUnification)
	}
	s := tc.Client
	if s.KeyStore.Location != "/etc/zk/server.p12" || s.KeyStore.Password != "kspw" || s.KeyStore.Type != "PKCS12" ||
		s.TrustStore.Location != "/etc/zk/ca.pem" || s.TrustStore.Type != "PEM" || s.ClientAuth != "want" ||
		s.Protocol != "TLSv1.2" || len(s.EnabledProtocols) != 2 || len(s.CipherSuites) != 2 || !s.HostnameVerificationDisabled {
		t.Errorf("ssl.*: %+v", s)
	}
	if !tc.QuorumEnabled || tc.Quorum.KeyStore.Location != "/etc/zk/peer.pem" || tc.Quorum.ClientAuth != "need" {
		t.Errorf("ssl.quorum.*: %+v", tc.Quorum)
	}
	if tc.X509SuperUser != "CN=admin,O=Acme" || !tc.AdminHTTPS || !tc.NativeTLS() {
		t.Errorf("superUser %q admin https %v native tls %v", tc.X509SuperUser, tc.AdminHTTPS, tc.NativeTLS())
	}
	for _, w := range c.Warnings {
		if strings.Contains(w, "unknown key") {
			t.Errorf("a TLS key was not recognised: %s", w)
		}
	}
	c.Normalize()
	if err := c.Validate(); err != nil {
		t.Errorf("valid TLS configuration refused: %v", err)
	}
}

func TestZooCfgSecurePortOnly(t *testing.T) {
	c, err := ParseZooCfg([]byte("secureClientPort=2281\nssl.keyStore.location=k.pem\n"), "/etc/zk")
	if err != nil {
		t.Fatal(err)
	}
	if c.ClientAddr != "127.0.0.1:2281" || !c.TLS.ClientPortTLS || c.TLS.SecureClientAddr != "" {
		t.Errorf("secure port alone: client %s tlsOnly %v secure %q", c.ClientAddr, c.TLS.ClientPortTLS, c.TLS.SecureClientAddr)
	}
	if c.TLS.Client.KeyStore.Location != "/etc/zk/k.pem" {
		t.Errorf("a relative key store path is resolved against the file's directory: %q", c.TLS.Client.KeyStore.Location)
	}
	// Without a key store, a TLS port cannot open.
	c, _ = ParseZooCfg([]byte("secureClientPort=2281\n"), "")
	c.Normalize()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "ssl.keyStore.location") {
		t.Errorf("TLS port without a key store: %v", err)
	}
	c, _ = ParseZooCfg([]byte("clientPort=2181\nsslQuorum=true\n"), "")
	c.Normalize()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "ssl.quorum.keyStore.location") {
		t.Errorf("sslQuorum without stores: %v", err)
	}
	if _, err := ParseZooCfg([]byte("clientPort=2181\nsslQuorum=yes\n"), ""); err == nil {
		t.Error("sslQuorum=yes accepted")
	}
}

func TestYAMLTLS(t *testing.T) {
	c, err := ParseYAMLConfig([]byte(`
client_addr: 127.0.0.1:2181
secure_client_addr: 127.0.0.1:2281
ssl:
  key_store: {location: server.pem}
  trust_store: {location: ca.pem}
  client_auth: need
ssl_quorum_enabled: true
ssl_quorum:
  key_store: {location: peer.p12, password: pw}
  trust_store: {location: ca.pem}
x509_super_user: CN=admin
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.TLS.SecureClientAddr != "127.0.0.1:2281" || c.TLS.Client.KeyStore.Location != "server.pem" ||
		!c.TLS.QuorumEnabled || c.TLS.Quorum.KeyStore.Password != "pw" || c.TLS.X509SuperUser != "CN=admin" {
		t.Errorf("yaml TLS: %+v", c.TLS)
	}
}
