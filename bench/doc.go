// Package bench is a load generator for ZooKeeper-protocol servers, in the
// spirit of ClickHouse's keeper-bench; `zkbridge bench` is its command
// line. It speaks the wire protocol through zkproto only, so it measures
// zkbridge and a real ZooKeeper alike.
//
// Each connection is one session that pipelines: up to Outstanding
// requests are in flight, sent in batches and matched to their replies in
// order (a server answers a session's requests in the order it received
// them). A general-purpose client that waits for each reply would measure
// itself rather than the server. With Rate set, the request/reply
// workloads are paced to that many ops/s over all connections, so that
// two servers can be compared at the same load rather than each at its
// own maximum.
//
// Workloads: create (new nodes), set, get, exists (on a keyspace of nodes
// made beforehand, Fanout per directory), list (getChildren of those
// directories), mixed (ops picked by weight, see ParseMix), multi
// (transactions of MultiOps setData each) and watch (Watchers sessions
// watch one node, one session writes it; a round's latency is the time from
// the write's send to the last watcher's event) and connect (sessions
// opened and closed one after another by each of Connections connectors;
// the unit is a session, its latency the handshake's).
//
// Probe is no workload: it polls a server until getAllChildrenNumber of a
// path answers, to time how long a restarted server takes to serve.
//
// A run warms up for Warmup (load not measured), then measures for
// Duration or for Ops operations. Latencies go into a log-linear
// histogram (Histogram) of bounded memory and ~1.6% precision. Every
// node a run touches lives under Root; with Cleanup, the nodes the run
// created are deleted at the end. Run returns a Result, which prints as a
// table (WriteTable) or marshals to JSON. Given the pids of local server
// processes (ServerPIDs, Linux), the result also says what they spent per
// op over the measured time: CPU, time waiting for a CPU, and switches.
//
// Nothing here dials anything but the addresses in Config.Addrs.
package bench
