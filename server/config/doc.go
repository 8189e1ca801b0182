// Package config is one node's configuration: the Config struct with
// ZooKeeper's defaults (Normalize) and its checks (Validate), read from
// command-line flags (cli), a YAML file, or a zoo.cfg accepted as is
// (ParseZooCfg: tickTime, dataDir, clientPort, server.N, myid, …; unknown
// keys are warnings, settings that cannot work are errors).
package config
