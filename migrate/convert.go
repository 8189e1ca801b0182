package migrate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zkbridge/zkbridge/migrate/zkdata"
)

// ConvertResult describes the data directory a conversion read.
type ConvertResult struct {
	Snapshot string   `json:"snapshot"` // "" when there was none
	Zxid     int64    `json:"last_zxid"`
	Nodes    int64    `json:"nodes"`
	Sessions int64    `json:"sessions"`
	Tails    []string `json:"tails,omitempty"` // torn log tails that ended the replay
	// Skipped are newer snapshots that did not verify (ZooKeeper too falls
	// back to an older one and replays more of the logs).
	Skipped []string `json:"skipped_snapshots,omitempty"`
	// DigestVerified: the replayed tree's digest equals the one ZooKeeper
	// logged with the last txn (false when that txn carried none: digests
	// off, or no txn after the snapshot).
	DigestVerified bool `json:"digest_verified"`
}

// Convert reads a stopped ZooKeeper's data directory (the newest snapshot,
// its Adler32 seals verified, and every later log entry replayed) and
// feeds the resulting sessions and nodes to sink, parents first. begin
// gets the header (the last zxid replayed) before anything is fed.
//
// The replay runs in memory (zkdata.Tree): it needs about the size of the
// tree's data and paths.
func Convert(snapDir, logDir, path string, begin func(Header) error, sink Sink) (*ConvertResult, error) {
	d, err := zkdata.OpenDataDir(snapDir, logDir)
	if err != nil {
		return nil, fmt.Errorf("open the data directory: %w", err)
	}
	res := &ConvertResult{}
	tree, tails, err := loadNewestValid(d, res)
	if err != nil {
		return nil, fmt.Errorf("read the data directory: %w (is ZooKeeper stopped, and are --snap-dir and --log-dir the same server's?)", err)
	}
	for _, t := range tails {
		res.Tails = append(res.Tails, t.String())
	}
	res.Zxid = tree.Zxid
	recountQuotas(tree)
	if d := tree.LastDigest; d != nil {
		if got := tree.Digest(); got != d.TreeDigest {
			return nil, fmt.Errorf("the replayed tree's digest %#x is not the %#x ZooKeeper logged with its last txn (zxid %#x): the snapshot and logs do not belong together (mixed servers or ensembles?)", got, d.TreeDigest, tree.Zxid)
		}
		res.DigestVerified = true
	}
	if tree.Nodes[path] == nil {
		return nil, fmt.Errorf("%s is not in the data directory's tree", path)
	}
	h := Header{Source: d.SnapDir, Path: path, LastZxid: tree.Zxid}
	if err := begin(h); err != nil {
		return nil, err
	}
	// Only the sessions that own an ephemeral of the subtree, for a
	// subtree; all of them for the whole tree.
	wanted := map[int64]bool{}
	paths := tree.Paths() // sorted: every parent before its descendants
	inside := func(p string) bool {
		return path == "/" || p == path || strings.HasPrefix(p, path+"/")
	}
	for _, p := range paths {
		if inside(p) {
			if k, _ := zkdata.EphemeralKind(tree.Nodes[p].Stat.EphemeralOwner); k == "ephemeral" {
				wanted[tree.Nodes[p].Stat.EphemeralOwner] = true
			}
		}
	}
	for _, s := range sortedSessions(tree.Sessions) {
		if path == "/" || wanted[s.ID] {
			if err := sink.Session(s); err != nil {
				return nil, err
			}
			res.Sessions++
		}
	}
	var anc []string
	for q := parentPath(path); q != ""; q = parentPath(q) {
		anc = append([]string{q}, anc...)
	}
	emit := func(p string, ancestor bool) error {
		n := tree.Nodes[p]
		st := zkdata.ClientStat(n.Stat, len(n.Data), int(n.NumChildren))
		out := &Node{Path: p, Data: n.Data, Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid, Ctime: st.Ctime, Mtime: st.Mtime,
			Version: st.Version, Cversion: st.Cversion, Aversion: st.Aversion, EphemeralOwner: n.Stat.EphemeralOwner,
			NumChildren: st.NumChildren, Creates: n.Stat.Cversion, Ancestor: ancestor}
		for _, a := range n.ACL {
			out.ACL = append(out.ACL, ACL{Perms: a.Perms, Scheme: a.Scheme, ID: a.ID})
		}
		return sink.Node(out)
	}
	for _, p := range anc {
		if err := emit(p, true); err != nil {
			return nil, err
		}
	}
	for _, p := range paths {
		if !inside(p) || !migratable(p) || strings.HasPrefix(p, "/zookeeper/config/") {
			continue
		}
		if err := emit(p, false); err != nil {
			return nil, err
		}
		res.Nodes++
	}
	return res, nil
}

// loadNewestValid replays the newest snapshot that reads and verifies, and
// the logs after it. Damage in a log is an error at once: no older
// snapshot avoids replaying it.
func loadNewestValid(d *zkdata.DataDir, res *ConvertResult) (*zkdata.Tree, []zkdata.Tail, error) {
	if len(d.Snapshots) == 0 {
		return zkdata.LoadTreeFrom(d, nil)
	}
	var first error
	for i := len(d.Snapshots) - 1; i >= 0; i-- {
		snap := d.Snapshots[i]
		tree, tails, err := zkdata.LoadTreeFrom(d, &snap)
		if err == nil {
			res.Snapshot = snap.Path
			return tree, tails, nil
		}
		var corrupt *zkdata.CorruptError
		if errors.As(err, &corrupt) {
			return nil, nil, err
		}
		if first == nil {
			first = err
		}
		res.Skipped = append(res.Skipped, fmt.Sprintf("%s: %v", snap.Path, err))
	}
	return nil, nil, first
}

// recountQuotas sets every quota's stats node from its subtree, as
// ZooKeeper does when it loads its data (setupQuota): the stats it keeps
// while running are never logged, so the replayed stats node holds what
// its create wrote.
func recountQuotas(tree *zkdata.Tree) {
	const root = "/zookeeper/quota"
	for p := range tree.Nodes {
		if !strings.HasPrefix(p, root+"/") || !strings.HasSuffix(p, "/zookeeper_limits") {
			continue
		}
		q := strings.TrimSuffix(strings.TrimPrefix(p, root), "/zookeeper_limits")
		stats := tree.Nodes[root+q+"/zookeeper_stats"]
		if stats == nil || tree.Nodes[q] == nil {
			continue
		}
		var count, bytes int64
		for path, n := range tree.Nodes {
			if path == q || strings.HasPrefix(path, q+"/") {
				count++
				bytes += int64(len(n.Data))
			}
		}
		stats.Data = []byte(setStats(string(stats.Data), count, bytes))
	}
}

// setStats rewrites count and bytes in a StatsTrack string
// ("count=1,bytes=2[,…]"), keeping any other field.
func setStats(s string, count, bytes int64) string {
	var out []string
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "count":
			kv = fmt.Sprintf("count=%d", count)
		case "bytes":
			kv = fmt.Sprintf("bytes=%d", bytes)
		case "":
			continue
		}
		seen[k] = true
		out = append(out, kv)
	}
	if !seen["count"] {
		out = append(out, fmt.Sprintf("count=%d", count))
	}
	if !seen["bytes"] {
		out = append(out, fmt.Sprintf("bytes=%d", bytes))
	}
	return strings.Join(out, ",")
}
