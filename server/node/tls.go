package node

import (
	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/server/tlsconf"
)

// quorumTLS loads the Raft peers' TLS material when sslQuorum is on (nil
// otherwise): every node then needs a certificate its peers trust.
func quorumTLS(cfg config.Config, log zerolog.Logger) (*tlsconf.Source, error) {
	if !cfg.TLS.QuorumEnabled {
		return nil, nil
	}
	src, err := tlsconf.NewSource(cfg.TLS.Quorum, "ssl.quorum", log)
	if err != nil {
		return nil, err
	}
	cert := src.Certificate()
	log.Info().Str("subject", tlsconf.JavaDN(cert)).Time("not_after", cert.NotAfter).
		Msg("sslQuorum: Raft peers talk mutual TLS")
	return src, nil
}
