// Package tlsconf turns ZooKeeper's ssl.* settings into Go TLS
// configurations for every zkbridge port: the secure client port, the
// native gRPC port, the admin HTTP port and the Raft peer transport
// (ssl.quorum.*).
//
// It reads key and trust stores in the formats ZooKeeper reads (PEM and
// PKCS12; JKS is refused with the keytool command that converts it),
// reloads them when their files change so certificates rotate without a
// restart, and renders a certificate's subject the way Java's
// X500Principal.getName() does (RFC 2253), which is the identity
// ZooKeeper's x509 auth provider gives a client.
package tlsconf
