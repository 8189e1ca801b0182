package server

import (
	"crypto/tls"

	"github.com/zkbridge/zkbridge/server/admin"
	"github.com/zkbridge/zkbridge/server/tlsconf"
)

// secureDoors puts the native gRPC port and, with admin.forceHttps, the
// admin port on the ssl.* settings of the client port: one key store, one
// trust store, one clientAuth for every port a client reaches. Called
// once the ports are bound.
func (s *Server) secureDoors() error {
	t := s.cfg.TLS
	nativeTLS := s.native != nil && t.NativeTLS()
	adminTLS := s.admin != nil && t.AdminHTTPS
	if !nativeTLS && !adminTLS {
		return nil
	}
	src, err := tlsconf.NewSource(t.Client, "ssl", s.log.With().Str("component", "tls").Logger())
	if err != nil {
		return err
	}
	if nativeTLS {
		s.native.UseTLS(src.ServerConfig("h2"))
		s.log.Info().Str("native_addr", s.native.Addr()).Msg("native API on TLS (ssl.*)")
	}
	if adminTLS {
		s.admin.UseTLS(src.ServerConfig("http/1.1"))
		peerTLS := func(addr string) *tls.Config { return src.ClientConfig(addr, "http/1.1") }
		s.admin.PeerTLS(peerTLS)                               // the web console asks the other nodes
		s.node.SetProgressSource(admin.HTTPSProgress(peerTLS)) // and the leader their Raft progress
		s.log.Info().Str("admin_addr", s.admin.Addr()).Msg("admin server on HTTPS (admin.forceHttps)")
	}
	return nil
}

// SecureClientAddr returns the address of the TLS client listener: the
// secure client port, or the client port itself when it speaks TLS only
// or both (port unification); "" without client TLS.
func (s *Server) SecureClientAddr() string { return s.zk.SecureAddr() }
