package console

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"sync"

	"github.com/zkbridge/zkbridge/server/node"
)

// Local is what one node tells the console of another node (GET
// /ui/api/local): its own view, which only it has — Raft progress, its
// doors' clients and counters, its native door's activity.
type Local struct {
	Tenant       string               `json:"tenant"`
	ReplicaID    uint64               `json:"replica_id"`
	Role         string               `json:"role"`
	LeaderID     uint64               `json:"leader_id"`
	Term         uint64               `json:"term"`
	CommitIndex  uint64               `json:"commit_index"`
	AppliedIndex uint64               `json:"applied_index"`
	Connections  int                  `json:"connections"`
	Sessions     int                  `json:"sessions"`
	Znodes       int64                `json:"znodes"`
	Watches      int64                `json:"watches"`
	FsyncP99     float64              `json:"fsync_p99_ms"`
	Version      string               `json:"version"`
	Conns        []node.ConnInfo      `json:"conns"`
	Bridge       *node.BridgeActivity `json:"bridge,omitempty"`
}

func (c *Console) local() Local {
	return c.localIn(scope{Tenant: DefaultTenant, Node: c.opt.Node, Doors: c.opt.Doors})
}

// localIn is Local of a tenant this node hosts.
func (c *Console) localIn(sc scope) Local {
	p := sc.Node.LocalProgress()
	l := Local{Tenant: sc.Tenant, ReplicaID: p.ReplicaID, Role: p.Role, LeaderID: p.LeaderID, Term: p.Term,
		CommitIndex: p.CommitIndex, AppliedIndex: p.AppliedIndex, Version: c.opt.Version,
		FsyncP99: c.ring.fsyncP99(), Conns: sc.Doors.ConsoleConns()}
	if l.CommitIndex < l.AppliedIndex {
		l.CommitIndex = l.AppliedIndex
	}
	sc.Doors.Gauges(func(name, _ string, v float64) {
		switch name {
		case "zk_num_alive_connections":
			l.Connections = int(v)
		case "zk_global_sessions":
			l.Sessions = int(v)
		case "zk_znode_count":
			l.Znodes = int64(v)
		case "zk_watch_count":
			l.Watches = int64(v)
		}
	})
	if c.opt.Bridge != nil && sc.Tenant == DefaultTenant {
		b := c.opt.Bridge()
		l.Bridge = &b
	}
	return l
}

func (c *Console) localJSON(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.viewerOr401(w, r); !ok {
		return
	}
	sc, ok := c.scopeOr404(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(c.localIn(sc))
}

// NodeView is one member of the cluster as the console shows it.
type NodeView struct {
	Local
	Self       bool
	Observer   bool
	AdminAddr  string
	ClientAddr string
	Lag        int64 // entries behind the highest commit index seen; -1 unknown
	Error      string
}

// nodes asks every member of the directory for its Local, concurrently and
// bounded (a dead node shows its error, it does not hold up the page).
func (c *Console) nodes(ctx context.Context, sc scope) []NodeView {
	self := c.opt.Node.ReplicaID()
	dir := c.opt.Node.Membership().Directory
	out := make([]NodeView, 0, len(dir)+1)
	if _, ok := dir[self]; !ok {
		out = append(out, NodeView{Self: true})
	}
	path := "/ui/api/local"
	if sc.Tenant != DefaultTenant {
		path += "?tenant=" + url.QueryEscape(sc.Tenant)
	}
	for id, info := range dir {
		if sc.Replicas != nil && !slices.Contains(sc.Replicas, id) {
			continue // a tenant's page asks the nodes hosting it
		}
		out = append(out, NodeView{Local: Local{ReplicaID: id}, Self: id == self, Observer: info.Observer, AdminAddr: info.AdminAddr, ClientAddr: info.ClientAddr})
	}
	var wg sync.WaitGroup
	for i := range out {
		n := &out[i]
		if n.Self {
			addr, client, obs := n.AdminAddr, n.ClientAddr, n.Observer
			n.Local = c.localIn(sc)
			n.AdminAddr, n.ClientAddr, n.Observer = addr, client, obs
			continue
		}
		if n.AdminAddr == "" {
			n.Error = "no admin address (admin disabled on that node)"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var l Local
			if err := c.opt.Peer(ctx, n.AdminAddr, path, &l); err != nil {
				n.Error = err.Error()
				return
			}
			n.Local = l
		}()
	}
	wg.Wait()
	var top uint64
	for _, n := range out {
		if n.Error == "" && n.CommitIndex > top {
			top = n.CommitIndex
		}
	}
	for i := range out {
		out[i].Lag = -1
		if out[i].Error == "" {
			out[i].Lag = int64(top) - int64(out[i].AppliedIndex)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ReplicaID < out[j].ReplicaID })
	return out
}

func decodeJSON(r io.Reader, out any) error {
	return json.NewDecoder(io.LimitReader(r, 64<<20)).Decode(out)
}
