package native

import (
	"crypto/tls"
)

// UseTLS makes the bound listener serve TLS with cfg (call after Listen,
// before Serve). gRPC clients need the "h2" protocol in cfg's ALPN list.
func (s *Server) UseTLS(cfg *tls.Config) {
	s.ln = tls.NewListener(s.ln, cfg)
}
