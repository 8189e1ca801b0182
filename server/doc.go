// Package server will hold one zkbridge node: the dragonboat NodeHost
// wiring, the ZooKeeper client listener (TCP/TLS), connections and their
// per-session request pipeline, the session tracker, the watch manager,
// four-letter words, the admin HTTP endpoint (/commands, /metrics), the
// native RPC service, peer RPCs, and configuration loading (flags, YAML,
// zoo.cfg).
package server
