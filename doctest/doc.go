// Package doctest runs the commands of zkbridge's documentation: every
// fenced block of README.md and docs/*.md marked runnable is executed by
// `go test ./doctest/` (and so by `make test`), and the test fails with the
// block's file:line and its output when one exits non-zero.
//
// # Marking a block
//
// The info string of the opening fence says what a block is:
//
//	```sh runnable                 run it under bash
//	```sh runnable server          run it while a fresh node serves (below)
//	```go runnable server          a Go program: run it with `go run`
//	```sh runnable needs=nc        skip it, saying why, where nc is missing
//	```sh runnable timeout=120s    its own bound (default 60 s)
//
// Options may be combined (`sh runnable server needs=curl`); an unknown
// one fails the test, so that a typo does not turn a block off. needs= is
// a comma-separated list of commands looked up on the block's PATH (an
// absolute path need only exist) and of `kazoo`, which means python3 can
// import kazoo. A needed tool that is missing skips the block with
// t.Skip, never silently; `make test` installs ZooKeeper, its zkCli.sh,
// kazoo and a JRE first (scripts/install-zookeeper.sh), so there only
// tools outside that list (nc) can skip a block.
//
// A shell block (sh, bash, shell, console) that is not runnable must say
// why just above its fence, in an HTML comment that GitHub does not show:
//
//	<!-- not run: `make test` runs this test itself -->
//	```sh
//
// The test fails on a shell block that is neither runnable nor explained,
// so every command a user would type is either run or has a stated
// reason not to be. Blocks in other languages (yaml, text, a go block
// without runnable) are shown, not run.
//
// # How a block runs
//
// The zkbridge binary is built once from the repository root (`go build
// -o DIR/zkbridge .`) and its directory is put first on PATH, so a block
// calls `zkbridge` as a user who installed it would. Debian's kazoo is
// installed for /usr/bin/python3, which need not be the python3 first on
// PATH (pyenv), so when /usr/bin/python3 exists a `python3` linked to it
// comes right after.
//
// Each block runs as a script under `bash -euo pipefail -x`, with a
// timeout, in a fresh directory that stands in for the repository root:
// every top-level entry of the repository but bin/ and zkbridge-data/ is
// linked into it, so `scripts/local-cluster.sh` or `go.mod` resolve, while
// what the block writes (data directories, config files) stays in the
// temporary directory. TMPDIR is a fresh directory of the block's own, so
// the scripts' state directories (local-cluster.sh, start-zookeeper.sh) do
// not collide between blocks. ZKBRIDGE_BIN names the binary the test
// built, which scripts/local-cluster.sh then uses instead of building one.
//
// A `go runnable` block is written to main.go of a fresh module whose
// go.mod is the repository's (its module line renamed) and whose go.sum is
// the repository's, so it may import any module zkbridge requires
// (github.com/go-zookeeper/zk) without touching the network once `make
// deps` has filled the module cache; it is run with `go run .`.
//
// # Addresses: the documentation shows the defaults, the test rewrites them
//
// The documentation uses zkbridge's and ZooKeeper's well-known ports, as a
// user would: client 2181 (2182, 2183, … for more nodes, up to 2189), the
// native API 2191 (2190 to 2199), admin HTTP 8080 (to 8089), Raft 2888 (to
// 2899) and ZooKeeper's election ports 3888 (to 3899). Every whole-number
// occurrence of one of these in a runnable block (`127.0.0.1:2181`,
// `localhost:8080`, `clientPort=2181`, `nc 127.0.0.1 2181`,
// `server.1=127.0.0.1:2888:3888`) is replaced, before the block runs, by
// a loopback port that was free a moment before, the same number by the
// same port throughout the block. Blocks then run in parallel, and beside
// anything else that holds the real ports. A port must therefore be
// written out: one computed in the block ($((2180 + i))) escapes the
// rewriting.
//
// So a runnable block that starts a server names every address it binds,
// on the command line or in its config file: `zkbridge server` with no
// flags binds the fixed defaults, which the test cannot rewrite (that is
// `make run`, which the README shows as a not-run block).
//
// A `server` block gets a node of its own, started by the test before the
// block exactly as `make run` starts one (`zkbridge server`, the defaults
// for everything) except for its four addresses, which are the block's
// 2181, 8080, 2888 and 2191 (--native-addr), and its data directory; the
// test waits until its /readyz answers 200 and stops it after the block.
// So a block that shows what to type once `make run` serves is run as it
// is written, its ports rewritten.
//
// # Clean-up
//
// Every block runs in its own process group, and with ZKBRIDGE_DOCTEST set
// to a value of its own in its environment. When the block ends (or times
// out) the group is killed, and so is any process that still carries the
// block's ZKBRIDGE_DOCTEST value, which finds servers a block started with
// setsid (start-zookeeper.sh's JVMs). A block that leaves a process
// running a second after it ended fails: a user following it would be
// left with that process. Temporary directories go with t.Cleanup. The whole test
// takes well under three minutes (blocks run in parallel, each bounded).
//
// A failing block is reported as FILE:LINE (its opening fence) with the
// script as run (ports rewritten) and its output, in which bash -x shows
// each command before its result; line N of the block is line LINE+N of
// the file. `go test -v ./doctest/` prints the same for every block.
// `go test -run 'TestDocs/blocks/docs/operations.md:17' ./doctest/` runs
// one block.
//
// TestLinks checks that every relative link of these files names a file
// that exists and, with a #fragment, a heading of that anchor.
//
// The test is Linux-only (bash, process groups, /proc), as the documented
// commands are; `go test -short` skips the blocks.
package doctest
