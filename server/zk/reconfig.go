package zk

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// handleReconfig runs opcode 16 (reconfigEnabled). It checks in ZooKeeper's
// order (PrepRequestProcessor): a membership change in flight, the
// configuration's version, the member arguments (reconfigspec.go), and only
// then WRITE on /zookeeper/config; every refusal is an error transaction,
// which consumes a zxid as ZooKeeper's does. The leaving, joining or new
// members then become Raft membership changes, one at a time; the members'
// specs and ZooKeeper's order of them are replicated with the change, and
// the reply is the new /zookeeper/config.
//
// The checks run on the connection's reader: a reconfig is rare, and its
// refusal must be proposed in the connection's order.
func (c *conn) handleReconfig(h zkproto.RequestHeader, r *zkproto.ReconfigRequest) {
	plan, code := c.planReconfig(r)
	if code == zkproto.ErrOK {
		code = c.reconfigAllowed()
	}
	if code != zkproto.ErrOK {
		c.propose(h, &sm.Rejected{Code: code}, false)
		return
	}
	p := c.addPending(h.Xid, h.Type)
	c.unordered.Add(1)
	go func() {
		defer c.unordered.Add(-1)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if code := c.srv.reconfigure(ctx, plan); code != zkproto.ErrOK {
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

// reconfigChange is a checked reconfig: the members to remove and add, the
// next configuration in ZooKeeper's order.
type reconfigChange struct {
	remove []uint64
	add    []MemberSpec
	next   []MemberSpec
}

// planReconfig checks a reconfig's version and arguments against the
// current membership, before the ACL, as ZooKeeper does.
func (c *conn) planReconfig(r *zkproto.ReconfigRequest) (*reconfigChange, zkproto.ErrCode) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := c.srv.node.RefreshMembership(ctx)
	if err != nil {
		return nil, zkproto.ErrReconfigInProgress
	}
	// curConfigId is the configuration's version: the zxid that
	// /zookeeper/config shows after version=.
	if r.CurConfigID != -1 && r.CurConfigID != m.ConfigZxid {
		return nil, zkproto.ErrBadVersion
	}
	var args ReconfigArgs
	if s, ok := r.Joining(); ok {
		args.Joining = &s
	}
	if s, ok := r.Leaving(); ok {
		args.Leaving = &s
	}
	if s, ok := r.Members(); ok {
		args.NewMembers = &s
	}
	cur := currentMembers(m)
	plan, err := PlanReconfig(cur, args)
	if err != nil {
		c.log.Info().Err(err).Msg("reconfig refused: bad members")
		return nil, SpecErrorCode(err)
	}
	ch := &reconfigChange{next: plan.Members}
	members := map[int64]MemberSpec{}
	for _, mem := range cur {
		members[mem.ID] = mem
	}
	keep := map[int64]bool{}
	for _, mem := range plan.Members {
		keep[mem.ID] = true
		old, ok := members[mem.ID]
		switch {
		case mem.ID <= 0:
			c.log.Info().Int64("replica_id", mem.ID).Msg("reconfig refused: Raft replica ids are positive")
			return nil, zkproto.ErrBadArguments
		case !ok:
			ch.add = append(ch.add, mem)
		case old.Observer != mem.Observer || old.PeerAddr() != mem.PeerAddr():
			// Raft cannot bring a removed replica id back: a new role or
			// peer address needs a new server id.
			c.log.Info().Int64("replica_id", mem.ID).Msg("reconfig refused: a member's role or peer address cannot change in place; use a new server id")
			return nil, zkproto.ErrBadArguments
		}
	}
	for _, mem := range cur {
		if !keep[mem.ID] {
			ch.remove = append(ch.remove, uint64(mem.ID))
		}
	}
	voters := len(m.Voters)
	for _, id := range ch.remove {
		if _, ok := m.Voters[id]; ok {
			voters--
		}
	}
	if voters < len(m.Voters)/2+1 {
		// Fewer than a majority of today's voters would be left to outvote
		// a failure (node.ErrBelowQuorum).
		return nil, zkproto.ErrNewConfigNoQuorum
	}
	return ch, zkproto.ErrOK
}

// currentMembers is the membership as /zookeeper/config lists it.
func currentMembers(m node.Membership) []MemberSpec {
	out := make([]MemberSpec, 0, len(m.Voters)+len(m.Observers))
	for _, id := range configOrder(m) {
		out = append(out, memberSpec(m, id))
	}
	return out
}

// reconfigAllowed checks WRITE on /zookeeper/config (super passes), as
// ZooKeeper does once the arguments are valid.
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

// reconfigure makes a checked reconfig's membership changes, then records
// the joiners' specs and the configuration's member order.
func (s *Server) reconfigure(ctx context.Context, ch *reconfigChange) zkproto.ErrCode {
	for _, id := range ch.remove {
		if err := s.node.RemoveVoter(ctx, id, false); err != nil {
			return reconfigError(s, err, "remove", id)
		}
	}
	for _, mem := range ch.add {
		add := s.node.AddVoter
		if mem.Observer {
			add = s.node.AddObserver
		}
		if err := add(ctx, uint64(mem.ID), mem.PeerAddr()); err != nil {
			return reconfigError(s, err, "add", uint64(mem.ID))
		}
	}
	dir := s.node.Membership().Directory
	for _, mem := range ch.add {
		info := dir[uint64(mem.ID)]
		info.ID, info.RaftAddr, info.Observer, info.Spec = uint64(mem.ID), mem.PeerAddr(), mem.Observer, mem.String()
		if info.ClientAddr == "" && mem.HasClient {
			info.ClientAddr = mem.ClientAddr()
		}
		if _, err := s.node.ProposeSync(&sm.Command{Op: &sm.RegisterReplica{Replica: info}}); err != nil {
			return reconfigError(s, err, "record the spec of", uint64(mem.ID))
		}
	}
	order := make([]uint64, len(ch.next))
	for i, mem := range ch.next {
		order[i] = uint64(mem.ID)
	}
	if err := s.node.RecordConfig(order); err != nil {
		return reconfigError(s, err, "record", 0)
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

// configOrder is the order /zookeeper/config lists the members in: the
// order the last reconfig recorded, then members it does not name in
// ZooKeeper's order of joining (MemberOrder), or, before any reconfig, by
// id.
func configOrder(m node.Membership) []uint64 {
	member := func(id uint64) bool {
		_, v := m.Voters[id]
		_, o := m.Observers[id]
		return v || o
	}
	var known []int64
	for _, id := range m.ConfigOrder {
		if member(id) {
			known = append(known, int64(id))
		}
	}
	var missing []int64
	for _, group := range []map[uint64]string{m.Voters, m.Observers} {
		for id := range group {
			if !slices.Contains(known, int64(id)) {
				missing = append(missing, int64(id))
			}
		}
	}
	slices.Sort(missing)
	if len(known) == 0 {
		out := make([]uint64, len(missing))
		for i, id := range missing {
			out[i] = uint64(id)
		}
		return out
	}
	ids := MemberOrder(known, nil, missing)
	out := make([]uint64, len(ids))
	for i, id := range ids {
		out[i] = uint64(id)
	}
	return out
}

// memberSpec is member id as /zookeeper/config writes it: the spec the
// reconfig that added it gave, or its registered addresses; its role is
// Raft's.
func memberSpec(m node.Membership, id uint64) MemberSpec {
	addr, observer := m.Voters[id], false
	if a, ok := m.Observers[id]; ok {
		addr, observer = a, true
	}
	info := m.Directory[id]
	if info.Spec != "" {
		if spec, err := ParseMemberSpec(int64(id), info.Spec); err == nil {
			spec.Observer = observer
			return spec
		}
	}
	return MemberFromAddrs(id, addr, info.ClientAddr, observer)
}
