// Package shell is `zkbridge shell`: a zkCli.sh 3.8-compatible ZooKeeper
// shell (same invocation, commands, flags, output and exit codes, checked
// against the real zkCli.sh by compat-tests/shell_test.go) that needs no
// JVM, plus what operators wish zkCli had: --json output of the read
// commands, tree, du, find, watch, data shown as text or hex
// (--format raw|hex|base64), dump/load of a subtree, and `top`, a live
// view of servers' mntr/srvr. It is a client (shell/zkclient): it works
// against zkbridge and against a real ZooKeeper ensemble alike.
package shell
