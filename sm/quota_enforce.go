package sm

import "github.com/zkbridge/zkbridge/zkproto"

// quotaExceeded is ZooKeeper 3.8's checkQuota (zookeeper.enforceQuota):
// with enforcement on, a create (countDiff 1) or setData (the change in
// bytes) under the longest quota path that prefixes p fails with
// QuotaExceeded when it would take the subtree past a hard limit
// (countHardLimit, byteHardLimit of zookeeper_limits). Soft limits (count,
// bytes) are never enforced, as in ZooKeeper, which only logs them. It runs
// in apply, on the state every replica has, so replicas agree.
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

// get is StatsTrack's getter: -1 for a missing key.
func (st *statsTrack) get(k string) int64 {
	if v, ok := st.vals[k]; ok {
		return v
	}
	return -1
}
