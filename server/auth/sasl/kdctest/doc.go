// Package kdctest runs a throwaway MIT Kerberos KDC (Debian's krb5-kdc) in
// a temporary directory for tests of SASL GSSAPI: a realm, principals
// with their keytabs, a krb5.conf that points clients at it, and kinit.
// Nothing outside the directory is touched; the KDC listens on a free
// loopback port.
package kdctest
