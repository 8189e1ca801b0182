package cli

import (
	"crypto/tls"

	ucli "github.com/urfave/cli/v2"

	"github.com/zkbridge/zkbridge/server/tlsconf"
)

// clientTLSFlags are the flags of a command that dials a zkbridge port
// which may speak TLS (the native API, the bench tool).
func clientTLSFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.BoolFlag{Name: "tls", Usage: "connect with TLS (implied by the other --tls-* flags); without --tls-ca the system's CAs are trusted"},
		&ucli.StringFlag{Name: "tls-ca", EnvVars: []string{"ZKBRIDGE_TLS_CA"}, Usage: "trust store `FILE` the server certificate must chain to (PEM or .p12, as ssl.trustStore)"},
		&ucli.StringFlag{Name: "tls-cert", EnvVars: []string{"ZKBRIDGE_TLS_CERT"}, Usage: "client certificate `FILE`: PEM with key and chain (as ssl.keyStore), .p12, or the certificate alone with --tls-key"},
		&ucli.StringFlag{Name: "tls-key", EnvVars: []string{"ZKBRIDGE_TLS_KEY"}, Usage: "client private key `FILE` (PEM) when --tls-cert holds only the certificate"},
		&ucli.StringFlag{Name: "tls-password", EnvVars: []string{"ZKBRIDGE_TLS_PASSWORD"}, Usage: "`PASSWORD` of .p12 stores"},
		&ucli.BoolFlag{Name: "tls-skip-hostname", Usage: "do not check that the server certificate names the host dialed (ssl.hostnameVerification=false); the chain is still checked"},
	}
}

// clientTLS returns the TLS configuration the --tls-* flags ask for, or
// nil for plaintext.
func clientTLS(c *ucli.Context) (*tls.Config, error) {
	f := tlsconf.ClientFiles{
		CA: c.String("tls-ca"), Cert: c.String("tls-cert"), Key: c.String("tls-key"),
		Password: c.String("tls-password"), SkipHostnameVerification: c.Bool("tls-skip-hostname"),
	}
	if !c.Bool("tls") && f.CA == "" && f.Cert == "" && f.Key == "" {
		return nil, nil
	}
	return f.Config()
}
