package zk

import (
	"crypto/tls"
	"net"
	"testing"
	"time"
)

// helloBytes is the ClientHello a TLS client sends with serverName.
func helloBytes(t *testing.T, serverName string) []byte {
	t.Helper()
	client, server := net.Pipe()
	defer server.Close()
	go func() {
		_ = tls.Client(client, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}).Handshake()
		client.Close()
	}()
	buf := make([]byte, 16<<10)
	_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := server.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

// tcpPair is a connected loopback pair (peeking needs a real socket).
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// The server name is read from a ClientHello that arrives in pieces, and
// nothing of it is consumed: the connection still starts with it.
func TestPeekServerName(t *testing.T) {
	hello := helloBytes(t, "alpha.zk.test")
	client, server := tcpPair(t)
	go func() {
		_, _ = client.Write(hello[:3])
		time.Sleep(50 * time.Millisecond)
		_, _ = client.Write(hello[3:40])
		time.Sleep(50 * time.Millisecond)
		_, _ = client.Write(hello[40:])
	}()
	name, err := peekServerName(server, 5*time.Second)
	if err != nil || name != "alpha.zk.test" {
		t.Fatalf("server name %q, %v", name, err)
	}
	got := make([]byte, len(hello))
	_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
	for n := 0; n < len(got); {
		m, err := server.Read(got[n:])
		if err != nil {
			t.Fatal(err)
		}
		n += m
	}
	if string(got) != string(hello) {
		t.Fatal("peeking consumed the ClientHello")
	}

	// No server name (an IP address); not TLS at all.
	client, server = tcpPair(t)
	_, _ = client.Write(helloBytes(t, "127.0.0.1"))
	if name, err := peekServerName(server, 5*time.Second); err != nil || name != "" {
		t.Fatalf("a ClientHello without SNI: %q, %v", name, err)
	}
	client, server = tcpPair(t)
	_, _ = client.Write([]byte{0, 0, 0, 44, 0, 0, 0, 0}) // a plaintext frame's start
	if _, err := peekServerName(server, time.Second); err == nil {
		t.Fatal("a plaintext ZooKeeper frame read as a ClientHello")
	}
}
