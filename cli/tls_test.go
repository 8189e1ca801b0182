package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/server"
	"github.com/zkbridge/zkbridge/server/tlsconf"
	"github.com/zkbridge/zkbridge/server/tlsconf/tlstest"
)

// TestCommandsOverTLS: with ssl.* set (clientAuth=need), the native
// commands and, with admin.forceHttps, the raft commands reach the node
// through the --tls-* flags, and fail without them.
func TestCommandsOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlstest.NewCA("cli CA")
	if err != nil {
		t.Fatal(err)
	}
	srvLeaf, _ := ca.Issue(tlstest.Options{CN: "node"})
	cliLeaf, _ := ca.Issue(tlstest.Options{CN: "operator"})
	ks, _ := srvLeaf.WritePKCS12KeyStore(dir, "node.p12", "pw")
	clientStore, _ := cliLeaf.WritePEMKeyStore(dir, "operator.pem")
	caPath, _ := ca.WritePEM(dir, "ca.pem")

	cfg := server.Config{DataDir: t.TempDir(), ClientAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", PeerAddr: freeAddr(t), NativeAddr: "127.0.0.1:0"}
	cfg.TLS.Client = tlsconf.Settings{KeyStore: tlsconf.Store{Location: ks, Password: "pw"}, TrustStore: tlsconf.Store{Location: caPath}}
	cfg.TLS.AdminHTTPS = true
	srv := startTestServer(t, cfg, 30*time.Second)
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := NewApp(&out, &out).Run(append([]string{"zkbridge"}, args...))
		return out.String(), err
	}
	tlsFlags := []string{"--tls-ca", caPath, "--tls-cert", clientStore}
	native := func(args ...string) []string {
		return append(append([]string{"native", args[0], "--addr", srv.NativeAddr(), "--timeout", "5s"}, tlsFlags...), args[1:]...)
	}
	if out, err := run(native("put", "/cli-tls", "v1")...); err != nil {
		t.Fatalf("native put over TLS: %v\n%s", err, out)
	}
	if out, err := run(native("get", "/cli-tls")...); err != nil || !strings.Contains(out, "v1") {
		t.Fatalf("native get over TLS: %v\n%s", err, out)
	}
	if _, err := run("native", "get", "--addr", srv.NativeAddr(), "--timeout", "2s", "/cli-tls"); err == nil {
		t.Error("native get in plaintext against a TLS port succeeded")
	}
	if out, err := run(append([]string{"raft", "leader", "--admin", srv.AdminAddr()}, tlsFlags...)...); err != nil || !strings.HasPrefix(out, "1 ") {
		t.Fatalf("raft leader over HTTPS: %q %v", out, err)
	}
	if _, err := run("raft", "leader", "--admin", srv.AdminAddr()); err == nil {
		t.Error("raft leader over plain HTTP against an HTTPS admin port succeeded")
	}
}
