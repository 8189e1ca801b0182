package zk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// serverSpec is one "server.N=host:peerPort:electionPort[:role][;client]"
// entry of a reconfig request.
type serverSpec struct {
	id       uint64
	raftAddr string
	observer bool
}

// parseServerSpecs reads comma- or newline-separated server entries; the
// election port is accepted and ignored (Raft has one peer port).
func parseServerSpecs(text string) ([]serverSpec, error) {
	var out []serverSpec
	for _, entry := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == '\n' }) {
		entry = strings.TrimSpace(entry)
		if entry == "" || strings.HasPrefix(entry, "version=") {
			continue
		}
		key, spec, ok := strings.Cut(entry, "=")
		idText, isServer := strings.CutPrefix(key, "server.")
		id, err := strconv.ParseUint(idText, 10, 64)
		if !ok || !isServer || err != nil || id == 0 {
			return nil, fmt.Errorf("%q is not server.N=host:port:port[:role][;client]", entry)
		}
		addr, _, _ := strings.Cut(spec, ";")
		parts := strings.Split(addr, ":")
		if len(parts) < 2 || parts[0] == "" {
			return nil, fmt.Errorf("server.%d=%q: want host:peerPort:electionPort", id, spec)
		}
		if _, err := strconv.ParseUint(parts[1], 10, 16); err != nil {
			return nil, fmt.Errorf("server.%d=%q: bad peer port", id, spec)
		}
		s := serverSpec{id: id, raftAddr: net.JoinHostPort(parts[0], parts[1])}
		if len(parts) >= 4 {
			switch parts[3] {
			case "participant":
			case "observer":
				s.observer = true
			default:
				return nil, fmt.Errorf("server.%d: role %q is neither participant nor observer", id, parts[3])
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// handleReconfig runs opcode 16 (reconfigEnabled): the leaving, joining or
// new members become Raft membership changes, one at a time; the reply is
// the new /zookeeper/config, as ZooKeeper's.
func (c *conn) handleReconfig(h zkproto.RequestHeader, r *zkproto.ReconfigRequest) {
	if code := c.reconfigAllowed(); code != zkproto.ErrOK {
		c.propose(h, &sm.Rejected{Code: code}, false) // an error transaction, as ZooKeeper's
		return
	}
	p := c.addPending(h.Xid, h.Type)
	c.unordered.Add(1)
	go func() {
		defer c.unordered.Add(-1)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		code := c.srv.reconfigure(ctx, r)
		if code != zkproto.ErrOK {
			c.complete(p, replyFrame(h.Xid, c.srv.lastZxid(), code, nil), false)
			return
		}
		_, _ = c.srv.node.RefreshMembership(ctx) // the reply shows the new config
		v, err := c.srv.node.View()
		if err != nil {
			c.abort()
			return
		}
		defer v.Close()
		n, err := v.Get(configNode)
		if err != nil {
			c.complete(p, replyFrame(h.Xid, c.srv.lastZxid(), errCode(err), nil), false)
			return
		}
		c.srv.overlayConfig(configNode, n)
		zxid, _ := v.LastZxid()
		c.complete(p, replyFrame(h.Xid, zxid, zkproto.ErrOK, &zkproto.GetDataResponse{Data: n.Data, Stat: n.Stat}), false)
	}()
}

// reconfigAllowed checks WRITE on /zookeeper/config (super passes), as
// ZooKeeper does before a reconfig.
func (c *conn) reconfigAllowed() zkproto.ErrCode {
	c.srv.node.LockReads()
	defer c.srv.node.UnlockReads()
	v, err := c.srv.node.View()
	if err != nil {
		return zkproto.ErrSystemError
	}
	defer v.Close()
	n, err := v.Get(configNode)
	if err != nil {
		return errCode(err)
	}
	if !sm.CheckACL(n.ACL, zkproto.PermWrite, c.authIDs(), c.srv.cfg.SuperDigest) {
		return zkproto.ErrNoAuth
	}
	return zkproto.ErrOK
}

// reconfigure turns a reconfig request into membership changes.
func (s *Server) reconfigure(ctx context.Context, r *zkproto.ReconfigRequest) zkproto.ErrCode {
	m, err := s.node.RefreshMembership(ctx)
	if err != nil {
		return zkproto.ErrReconfigInProgress
	}
	if r.CurConfigID != -1 && uint64(r.CurConfigID) != m.ConfigChangeID {
		return zkproto.ErrBadVersion
	}
	var joining []serverSpec
	var leaving []uint64
	if r.NewMembers != "" {
		members, err := parseServerSpecs(r.NewMembers)
		if err != nil || len(members) == 0 {
			s.log.Info().Err(err).Msg("reconfig refused: bad new members")
			return zkproto.ErrBadArguments
		}
		keep := map[uint64]bool{}
		for _, sp := range members {
			keep[sp.id] = true
			joining = append(joining, sp)
		}
		for _, group := range []map[uint64]string{m.Voters, m.Observers} {
			for _, id := range config.SortedIDs(group) {
				if !keep[id] {
					leaving = append(leaving, id)
				}
			}
		}
	} else {
		if joining, err = parseServerSpecs(r.JoiningServers); err != nil {
			s.log.Info().Err(err).Msg("reconfig refused: bad joining servers")
			return zkproto.ErrBadArguments
		}
		for _, f := range strings.FieldsFunc(r.LeavingServers, func(r rune) bool { return r == ',' || r == ' ' }) {
			id, err := strconv.ParseUint(f, 10, 64)
			if err != nil || id == 0 {
				return zkproto.ErrBadArguments
			}
			leaving = append(leaving, id)
		}
	}
	if len(joining) == 0 && len(leaving) == 0 {
		return zkproto.ErrBadArguments
	}
	var adds []serverSpec
	for _, sp := range joining {
		_, voter := m.Voters[sp.id]
		_, observer := m.Observers[sp.id]
		switch {
		case !voter && !observer:
			adds = append(adds, sp)
		case voter == sp.observer || (m.Voters[sp.id] != sp.raftAddr && m.Observers[sp.id] != sp.raftAddr):
			// Raft cannot bring a removed replica id back: a new role or
			// address needs a new server id.
			s.log.Info().Uint64("replica_id", sp.id).Msg("reconfig refused: a member's role or address cannot change in place; use a new server id")
			return zkproto.ErrBadArguments
		}
	}
	for _, id := range leaving {
		_, voter := m.Voters[id]
		_, observer := m.Observers[id]
		if !voter && !observer {
			return zkproto.ErrBadArguments
		}
	}
	for _, id := range leaving {
		if err := s.node.RemoveVoter(ctx, id, false); err != nil {
			return reconfigError(s, err, "remove", id)
		}
	}
	for _, sp := range adds {
		add := s.node.AddVoter
		if sp.observer {
			add = s.node.AddObserver
		}
		if err := add(ctx, sp.id, sp.raftAddr); err != nil {
			return reconfigError(s, err, "add", sp.id)
		}
	}
	return zkproto.ErrOK
}

func reconfigError(s *Server, err error, what string, id uint64) zkproto.ErrCode {
	s.log.Warn().Err(err).Uint64("replica_id", id).Msgf("reconfig: %s failed", what)
	if errors.Is(err, node.ErrBelowQuorum) {
		return zkproto.ErrNewConfigNoQuorum
	}
	return zkproto.ErrReconfigInProgress
}
