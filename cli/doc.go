// Package cli is zkbridge's command line: it builds the urfave/cli app
// (server, shell, raft, migrate, cutover, bench, version) and wires the
// other packages together. Nothing imports cli but main.
package cli
