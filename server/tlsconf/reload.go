package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// DefaultCheckInterval is how often, at most, a Source looks at its
// files' modification times: on a handshake, never in the background.
const DefaultCheckInterval = time.Second

// Source is one Settings' certificate, key and trust anchors, loaded at
// start and reloaded when the store files change, so a rotated
// certificate or CA is used by the next handshake without a restart
// (ZooKeeper's sslQuorumReloadCertFiles, on every port here). A reload
// that fails (a half-written file, a key that does not match its
// certificate) is logged and the previous material stays in use.
type Source struct {
	settings Settings
	name     string // "ssl" or "ssl.quorum", in logs and errors
	log      zerolog.Logger

	minVersion, maxVersion uint16
	cipherSuites           []uint16
	clientAuth             tls.ClientAuthType

	mu            sync.Mutex
	cur           *material
	checked       time.Time
	checkInterval time.Duration
}

// material is one loaded generation of the stores.
type material struct {
	cert      tls.Certificate
	roots     *x509.CertPool // nil without a trust store: the system's
	keyStamp  fileStamp
	trustStmp fileStamp
}

// fileStamp identifies a version of a file without reading it.
type fileStamp struct {
	mtime time.Time
	size  int64
}

func stamp(path string) fileStamp {
	if path == "" {
		return fileStamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mtime: fi.ModTime(), size: fi.Size()}
}

// NewSource loads s's stores; name prefixes its messages ("ssl",
// "ssl.quorum"). Invalid settings or unreadable stores are an error here,
// at start, not at the first handshake.
func NewSource(s Settings, name string, log zerolog.Logger) (*Source, error) {
	if !s.Enabled() {
		return nil, fmt.Errorf("%s: no key store (%s.keyStore.location) configured", name, name)
	}
	src := &Source{settings: s, name: name, log: log, checkInterval: DefaultCheckInterval}
	var err error
	if src.minVersion, src.maxVersion, err = s.versions(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var unknown []string
	if src.cipherSuites, unknown, err = s.cipherSuites(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, u := range unknown {
		log.Warn().Str("cipher_suite", u).Msgf("%s.ciphersuites: not implemented by zkbridge; skipped", name)
	}
	if src.clientAuth, err = s.clientAuth(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if src.clientAuth != tls.NoClientCert && s.TrustStore.Location == "" {
		log.Info().Msgf("%s: no trust store; client certificates are verified against the system's CAs", name)
	}
	m, err := src.load()
	if err != nil {
		return nil, err
	}
	src.cur = m
	src.checked = time.Now()
	return src, nil
}

// SetCheckInterval changes how often the files are looked at (tests use a
// short one).
func (src *Source) SetCheckInterval(d time.Duration) {
	src.mu.Lock()
	src.checkInterval = d
	src.mu.Unlock()
}

// Settings returns the settings the source was made from.
func (src *Source) Settings() Settings { return src.settings }

func (src *Source) load() (*material, error) {
	m := &material{
		keyStamp:  stamp(src.settings.KeyStore.Location),
		trustStmp: stamp(src.settings.TrustStore.Location),
	}
	cert, err := LoadKeyStore(src.settings.KeyStore)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src.name, err)
	}
	m.cert = cert
	if src.settings.TrustStore.Location != "" {
		if m.roots, _, err = LoadTrustStore(src.settings.TrustStore); err != nil {
			return nil, fmt.Errorf("%s: %w", src.name, err)
		}
	}
	return m, nil
}

// current returns the material in force, reloading it first if a store
// file changed since it was loaded.
func (src *Source) current() *material {
	src.mu.Lock()
	defer src.mu.Unlock()
	now := time.Now()
	if now.Sub(src.checked) < src.checkInterval {
		return src.cur
	}
	src.checked = now
	if stamp(src.settings.KeyStore.Location) == src.cur.keyStamp &&
		stamp(src.settings.TrustStore.Location) == src.cur.trustStmp {
		return src.cur
	}
	m, err := src.load()
	if err != nil {
		src.log.Warn().Err(err).Msgf("%s: store files changed but do not load; keeping the previous certificate (will retry)", src.name)
		return src.cur
	}
	src.log.Info().Str("subject", JavaDN(m.cert.Leaf)).Time("not_after", m.cert.Leaf.NotAfter).
		Msgf("%s: key or trust store changed; reloaded", src.name)
	src.cur = m
	return m
}

// Certificate returns the certificate in force (after a reload check).
func (src *Source) Certificate() *x509.Certificate { return src.current().cert.Leaf }

// ServerConfig returns a listener's TLS configuration: each handshake
// gets the material in force then. alpn lists the application protocols
// (gRPC needs "h2").
func (src *Source) ServerConfig(alpn ...string) *tls.Config {
	return &tls.Config{
		MinVersion: src.minVersion,
		NextProtos: alpn,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := src.current()
			return &tls.Config{
				Certificates: []tls.Certificate{m.cert},
				ClientAuth:   src.clientAuth,
				ClientCAs:    m.roots,
				MinVersion:   src.minVersion,
				MaxVersion:   src.maxVersion,
				CipherSuites: src.cipherSuites,
				NextProtos:   alpn,
			}, nil
		},
	}
}

// ClientConfig returns the configuration to dial addr (host:port) with:
// this source's certificate as the client certificate and its trust store
// as the roots. The server's certificate must name the dialed host unless
// ssl.hostnameVerification=false.
func (src *Source) ClientConfig(addr string, alpn ...string) *tls.Config {
	m := src.current()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{m.cert},
		RootCAs:      m.roots,
		ServerName:   host,
		MinVersion:   src.minVersion,
		MaxVersion:   src.maxVersion,
		CipherSuites: src.cipherSuites,
		NextProtos:   alpn,
	}
	if src.settings.HostnameVerificationDisabled {
		cfg.InsecureSkipVerify = true // the chain is still verified below
		cfg.VerifyPeerCertificate = VerifyChainOnly(m.roots)
	}
	return cfg
}

// VerifyChainOnly checks that the peer's chain leads to roots, without
// checking names.
func VerifyChainOnly(roots *x509.CertPool) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("tls: the peer sent no certificate")
		}
		certs := make([]*x509.Certificate, len(raw))
		for i, r := range raw {
			c, err := x509.ParseCertificate(r)
			if err != nil {
				return fmt.Errorf("tls: peer certificate: %w", err)
			}
			certs[i] = c
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
		for _, c := range certs[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := certs[0].Verify(opts)
		return err
	}
}

// VerifyClientChain checks a client certificate chain (DER, leaf first)
// as this source's listeners check one in the handshake: against the
// trust store in force (the system's CAs without one), for client
// authentication. It returns the parsed leaf. A node that received the
// chain from another node (a relayed client) uses it to hold the client
// to its own trust store.
func (src *Source) VerifyClientChain(chain [][]byte) (*x509.Certificate, error) {
	if len(chain) == 0 {
		return nil, errors.New("no client certificate")
	}
	certs := make([]*x509.Certificate, len(chain))
	for i, raw := range chain {
		c, err := x509.ParseCertificate(raw)
		if err != nil {
			return nil, fmt.Errorf("client certificate %d: %w", i, err)
		}
		certs[i] = c
	}
	opts := x509.VerifyOptions{Roots: src.current().roots, Intermediates: x509.NewCertPool(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := certs[0].Verify(opts); err != nil {
		return nil, fmt.Errorf("%s: client certificate %q: %w", src.name, JavaDN(certs[0]), err)
	}
	return certs[0], nil
}
