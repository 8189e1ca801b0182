package admin

import (
	"crypto/tls"
)

// UseTLS makes the bound listener serve HTTPS with cfg (call after Listen,
// before Serve): ZooKeeper's admin.forceHttps.
func (a *Server) UseTLS(cfg *tls.Config) {
	a.ln = tls.NewListener(a.ln, cfg)
}
