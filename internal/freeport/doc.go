// Package freeport picks loopback ports for tests that must choose a port
// number before a server binds it (a tenant's port is the same number on
// every node, so port 0 cannot be used).
package freeport
