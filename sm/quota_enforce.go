package sm

import "github.com/zkbridge/zkbridge/zkproto"

// quotaExceeded is ZooKeeper 3.8's checkQuota (zookeeper.enforceQuota):
// with enforcement on, a create (countDiff 1) or setData (the change in
// bytes) under the longest quota path that prefixes p fails with
// QuotaExceeded when it would take the subtree past a hard limit
// (countHardLimit, byteHardLimit of zookeeper_limits). Soft limits (count,
// bytes) are never enforced, as in ZooKeeper, which only logs them. It runs
// in apply, on the state every replica has, so replicas agree. Inside a
// multi every op is checked against the stats as they were before the
// multi, as ZooKeeper's PrepRequestProcessor reads the applied tree: a
// multi that deletes one node and creates another under a full quota is
// refused, and one that creates two nodes where one fits is admitted.
func (a *applier) quotaExceeded(p string, bytesDiff, countDiff int64) (bool, error) {
	if !a.cfg.EnforceQuota {
		return false, nil
	}
	n, err := a.quotaCount()
	if err != nil || n <= 0 {
		return false, err
	}
	for q := p; q != "/" && q != ""; q, _ = parentOf(q) {
		limitsNode, err := a.t.node(zkproto.QuotaPath + q + "/" + quotaLimitNode)
		if err != nil {
			return false, err
		}
		if limitsNode == nil {
			continue
		}
		limits := parseStatsTrack(string(limitsNode.data))
		checkCount := countDiff != 0 && (limits.get("count") > -1 || limits.get("countHardLimit") > -1)
		checkBytes := bytesDiff != 0 && (limits.get("bytes") > -1 || limits.get("byteHardLimit") > -1)
		if !checkCount && !checkBytes {
			return false, nil
		}
		statsNode, err := a.t.node(zkproto.QuotaPath + q + "/" + quotaStatNode)
		if err != nil || statsNode == nil {
			return false, err // ZooKeeper logs a missing stats node and allows
		}
		stats := parseStatsTrack(string(statsNode.data))
		if pend := a.inMulti[q]; pend != nil {
			if pend.recounted {
				return false, nil // no stats before the multi: ZooKeeper allows
			}
			stats.add("count", -pend.count)
			stats.add("bytes", -pend.bytes)
		}
		if hard := limits.get("countHardLimit"); checkCount && hard > -1 && stats.get("count")+countDiff > hard {
			return true, nil
		}
		if hard := limits.get("byteHardLimit"); checkBytes && hard > -1 && stats.get("bytes")+bytesDiff > hard {
			return true, nil
		}
		return false, nil
	}
	return false, nil
}

// quotaPending is what a multi's earlier ops did to one quota's stats.
type quotaPending struct {
	count, bytes int64
	recounted    bool // its stats node was created by the multi
}

// notePending records a change to q's stats while a multi runs.
func (a *applier) notePending(q string, count, bytes int64, recounted bool) {
	if a.inMulti == nil {
		return
	}
	p := a.inMulti[q]
	if p == nil {
		p = &quotaPending{}
		a.inMulti[q] = p
	}
	p.count += count
	p.bytes += bytes
	p.recounted = p.recounted || recounted
}

// get is StatsTrack's getter: -1 for a missing key.
func (st *statsTrack) get(k string) int64 {
	if v, ok := st.vals[k]; ok {
		return v
	}
	return -1
}
