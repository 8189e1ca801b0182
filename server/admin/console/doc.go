// Package console is the web console of a zkbridge node, served under /ui/
// on the admin HTTP listener of every node: the cluster (every node's role,
// indexes, lag, load, with live charts of this node's own metrics from an
// in-process ring buffer pushed over Server-Sent Events), the znode tree
// (paged children, stat in ZooKeeper's words, data as text, JSON or hex,
// ACLs, quota use, ephemeral owners linked to their sessions, path-prefix
// search), the sessions (with their clients, ephemerals and watches; an
// administrator may expire one) and the bridge (leases and their members,
// change-feed subscribers and offsets, cutover policies, AllocateID
// counters).
//
// The pages are Go templates rendered on the server; htmx and uPlot are
// vendored from npm (scripts/vendor-console-assets.sh) and embedded, so the
// console needs nothing at run time beyond the binary. Reads go through the
// node's replicated state with the identity of the viewer (the browser's IP
// and, when signed in, the administrator's digest identity) and the ACL
// checks a ZooKeeper client gets; writes need an administrator, writes
// enabled in the configuration, a CSRF token and a confirmation step.
//
// The Tenants page lists every tenant (shard, ports, leader, placement,
// znodes, sessions, ops/s, limits). The Tree and Sessions pages, and a
// tenant's figures page (its replica's Raft progress and mntr values), read
// the tenant named by ?tenant= (absent: the default tenant) on a node that
// hosts it, and keep it in their links and forms.
package console
