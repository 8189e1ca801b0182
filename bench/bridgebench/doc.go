// Package bridgebench measures the native API's workloads (`zkbridge bench
// native`) against zkbridge and, side by side, against etcd where one is
// given: leases held with heartbeats (etcd: leases with keep-alives), the
// change feed's commit-to-delivery latency under a steady write rate (etcd:
// watch), AllocateID blocks per second, and FetchMetadataSnapshot of a large
// tree (time, bytes). Every run is bounded by its duration and stops by
// itself; only the given addresses are contacted.
package bridgebench
