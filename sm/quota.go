package sm

import (
	"strconv"
	"strings"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Quotas, as ZooKeeper's DataTree keeps them. A quota on path P is the node
// /zookeeper/quota/P/zookeeper_limits (written by clients: zkCli setquota).
// The server keeps /zookeeper/quota/P/zookeeper_stats current: the count
// and data bytes of P's subtree, P included. Stats change with every create,
// delete and setData under the longest quota path that prefixes the node,
// by rewriting the stats node's data without a new version or zxid, and are
// recomputed from the subtree when the stats node is created. Enforcement
// (zookeeper.enforceQuota) is off, as ZooKeeper's default.
const (
	quotaLimitNode = "zookeeper_limits"
	quotaStatNode  = "zookeeper_stats"
)

// keyQuotaCount counts limit nodes, so writes skip the quota lookup while
// there are none (the usual case). It lives in the overlay like any key, so
// a failed multi rolls it back.
var keyQuotaCount = []byte("mquotas")

// quotaPathOf returns P for a node /zookeeper/quota/P/<name> with the
// given name, or "".
func quotaPathOf(p, name string) string {
	parent, base := splitPath(p)
	if base != name || !strings.HasPrefix(parent, zkproto.QuotaPath+"/") {
		return ""
	}
	return strings.TrimPrefix(parent, zkproto.QuotaPath)
}

func (a *applier) quotaCount() (int64, error) {
	v, err := a.t.get(keyQuotaCount)
	if err != nil {
		return 0, err
	}
	return decodeInt(v), nil
}

// quotaCreated runs after node p (with dataLen bytes) was created.
func (a *applier) quotaCreated(p string, dataLen int) error {
	if q := quotaPathOf(p, quotaLimitNode); q != "" {
		n, err := a.quotaCount()
		if err != nil {
			return err
		}
		a.t.set(keyQuotaCount, encodeInt(n+1))
	}
	if a.importing {
		return nil // the imported stats node is the source's, verbatim
	}
	if q := quotaPathOf(p, quotaStatNode); q != "" {
		if err := a.recountQuota(q); err != nil {
			return err
		}
	}
	return a.quotaAdjust(p, int64(dataLen), 1)
}

// quotaDeleted runs after node p (which had dataLen bytes) was deleted.
func (a *applier) quotaDeleted(p string, dataLen int) error {
	if q := quotaPathOf(p, quotaLimitNode); q != "" {
		n, err := a.quotaCount()
		if err != nil {
			return err
		}
		a.t.set(keyQuotaCount, encodeInt(n-1))
	}
	if a.importing {
		return nil
	}
	return a.quotaAdjust(p, -int64(dataLen), -1)
}

// quotaAdjust adds (bytes, count) to the stats of the longest quota path
// that prefixes p (the root never has a quota).
func (a *applier) quotaAdjust(p string, bytes, count int64) error {
	if a.importing {
		return nil
	}
	n, err := a.quotaCount()
	if err != nil || n <= 0 {
		return err
	}
	for q := p; q != "/" && q != ""; q, _ = parentOf(q) {
		limits, err := a.t.node(zkproto.QuotaPath + q + "/" + quotaLimitNode)
		if err != nil {
			return err
		}
		if limits == nil {
			continue
		}
		a.notePending(q, count, bytes, false)
		return a.rewriteStats(q, func(st *statsTrack) {
			st.add("count", count)
			st.add("bytes", bytes)
		})
	}
	return nil
}

// recountQuota sets q's stats from its subtree (ZooKeeper's
// updateQuotaForPath, run when the stats node is created).
func (a *applier) recountQuota(q string) error {
	root, err := a.t.node(q)
	if err != nil || root == nil {
		return err
	}
	count, bytes := int64(1), int64(len(root.data))
	tally := func(_, v []byte) error {
		rec, err := decodeNode(v)
		if err != nil {
			return err
		}
		count++
		bytes += int64(len(rec.data))
		return nil
	}
	if err := a.t.flush(); err != nil { // the scans read the batch
		return err
	}
	lo, hi := childRange(spaceNode, q)
	if err := scanKV(a.t.r, lo, hi, tally); err != nil {
		return err
	}
	lo, hi = deepRange(spaceNode, q)
	if err := scanKV(a.t.r, lo, hi, tally); err != nil {
		return err
	}
	a.notePending(q, 0, 0, true)
	return a.rewriteStats(q, func(st *statsTrack) {
		st.set("count", count)
		st.set("bytes", bytes)
	})
}

// rewriteStats edits the data of q's stats node in place: no version, zxid
// or time changes, and no watch fires (ZooKeeper writes DataNode.data).
func (a *applier) rewriteStats(q string, edit func(*statsTrack)) error {
	p := zkproto.QuotaPath + q + "/" + quotaStatNode
	n, err := a.t.node(p)
	if err != nil || n == nil {
		return err // ZooKeeper logs a missing stats node and goes on
	}
	st := parseStatsTrack(string(n.data))
	edit(st)
	data := []byte(st.String())
	a.sizes.DataBytes += int64(len(data) - len(n.data))
	n.data = data
	a.t.putNode(p, n)
	return nil
}

// statsTrack is ZooKeeper's StatsTrack text, "count=N,bytes=B[,key=value]":
// count and bytes first, other keys in their original order.
type statsTrack struct {
	keys []string
	vals map[string]int64
}

func parseStatsTrack(s string) *statsTrack {
	st := &statsTrack{vals: map[string]int64{}}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		st.set(k, n)
	}
	return st
}

func (st *statsTrack) set(k string, v int64) {
	if _, ok := st.vals[k]; !ok {
		st.keys = append(st.keys, k)
	}
	st.vals[k] = v
}

func (st *statsTrack) add(k string, d int64) { st.set(k, st.vals[k]+d) }

func (st *statsTrack) String() string {
	var parts []string
	for _, k := range []string{"count", "bytes"} {
		if v, ok := st.vals[k]; ok {
			parts = append(parts, k+"="+strconv.FormatInt(v, 10))
		}
	}
	for _, k := range st.keys {
		if k != "count" && k != "bytes" {
			parts = append(parts, k+"="+strconv.FormatInt(st.vals[k], 10))
		}
	}
	return strings.Join(parts, ",")
}
