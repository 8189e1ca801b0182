package zk

import (
	"crypto/sha1"
	"encoding/base64"
	"strings"

	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/wallclock"
	"github.com/zkbridge/zkbridge/zkproto"
)

// handleRequest decodes and dispatches one request. It returns false when
// the connection must stop reading (it is closing).
func (c *conn) handleRequest(frame []byte) bool {
	c.frameLen = len(frame)
	d := zkproto.NewDecoder(frame)
	var h zkproto.RequestHeader
	if err := h.Decode(d); err != nil {
		c.log.Warn().Err(err).Msg("malformed request header; closing connection")
		return false
	}
	c.stats.mu.Lock()
	c.stats.received++
	c.stats.mu.Unlock()
	c.srv.metrics.packetsReceived.Add(1)
	c.srv.node.TouchSession(c.sessionID())
	if h.Type != zkproto.OpPing {
		c.srv.throttleRequest() // a tenant's request rate limit; pings keep sessions alive
	}

	if h.Type != zkproto.OpAuth && h.Type != zkproto.OpSASL && !c.enforceAuth(h.Xid) {
		return false
	}
	if !h.Type.Known() || h.Type == zkproto.OpNotify || h.Type == zkproto.OpCreateSession || h.Type == zkproto.OpError {
		// ZooKeeper: ReplyHeader(xid, -1, Unimplemented), then close.
		c.log.Info().Int32("op", int32(h.Type)).Msg("unknown opcode; closing connection")
		p := c.addPending(h.Xid, h.Type)
		c.complete(p, replyFrame(h.Xid, -1, zkproto.ErrUnimplemented, nil), true)
		return false
	}
	req, _ := zkproto.NewRequest(h.Type)
	if err := req.Decode(d); err != nil {
		switch {
		case h.Type == zkproto.OpAuth || h.Type == zkproto.OpSASL:
			// ZooKeeper decodes these on the network thread: a bad
			// record closes the connection.
			c.log.Warn().Err(err).Str("op", h.Type.String()).Msg("malformed request; closing connection")
			return false
		case h.Type.IsWrite():
			// A write whose record does not decode (or a multi with an op
			// it cannot carry) is MarshallingError, logged by ZooKeeper as
			// an error transaction: it consumes a zxid.
			c.propose(h, &sm.Rejected{Code: zkproto.ErrMarshallingError}, false)
			return true
		default:
			// A read is answered MarshallingError in order; the
			// connection stays open.
			if !c.waitIdle() {
				return false
			}
			c.replyNow(h.Xid, h.Type, c.srv.lastZxid(), zkproto.ErrMarshallingError, nil)
			return true
		}
	}

	if c.refuseReadOnly(h) {
		return true
	}
	switch h.Type {
	case zkproto.OpPing:
		if !c.waitIdle() {
			return false
		}
		c.replyNow(zkproto.XidPing, h.Type, c.srv.lastZxid(), zkproto.ErrOK, nil)
	case zkproto.OpAuth:
		return c.handleAuth(h.Xid, req.(*zkproto.AuthPacket))
	case zkproto.OpCloseSession:
		c.closeRequested.Store(true)
		if c.readOnly.Load() {
			c.readOnlyClose(h)
			return false
		}
		c.propose(h, &sm.CloseSession{}, true)
		// Stop reading, but only once the reply is queued: ending the reader
		// now would close the output first and drop it.
		c.waitIdle()
		return false
	case zkproto.OpCheck:
		// check is only valid inside a multi. ZooKeeper ≤3.8.4 hangs the
		// request (ZOOKEEPER-2623); 3.8.5+ answers Unimplemented and closes.
		p := c.addPending(h.Xid, h.Type)
		c.complete(p, replyFrame(h.Xid, c.srv.lastZxid(), zkproto.ErrUnimplemented, nil), true)
		return false
	case zkproto.OpCreate, zkproto.OpCreate2, zkproto.OpCreateContainer:
		r := req.(*zkproto.CreateRequest)
		c.propose(h, &sm.Create{OpCode: h.Type, Path: r.Path, Data: r.Data, ACL: r.ACL, Flags: r.Flags}, false)
	case zkproto.OpCreateTTL:
		r := req.(*zkproto.CreateTTLRequest)
		c.propose(h, &sm.Create{OpCode: h.Type, Path: r.Path, Data: r.Data, ACL: r.ACL, Flags: r.Flags, TTL: r.TTL}, false)
	case zkproto.OpDelete:
		r := req.(*zkproto.DeleteRequest)
		c.propose(h, &sm.Delete{Path: r.Path, Version: r.Version}, false)
	case zkproto.OpDeleteContainer:
		// deleteContainer is internal to ZooKeeper's container manager. A
		// client's request fails in 3.8 with BadArguments (its path is read
		// from the whole request buffer), as an error transaction.
		c.propose(h, &sm.Rejected{Code: zkproto.ErrBadArguments}, false)
	case zkproto.OpSetData:
		r := req.(*zkproto.SetDataRequest)
		c.propose(h, &sm.SetData{Path: r.Path, Data: r.Data, Version: r.Version}, false)
	case zkproto.OpSetACL:
		r := req.(*zkproto.SetACLRequest)
		c.propose(h, &sm.SetACL{Path: r.Path, ACL: r.ACL, Version: r.Version}, false)
	case zkproto.OpMulti:
		ops, ok := multiOps(req.(*zkproto.MultiRequest))
		if !ok {
			c.propose(h, &sm.Rejected{Code: zkproto.ErrMarshallingError}, false)
			return true
		}
		c.propose(h, &sm.Multi{Ops: ops}, false)
	case zkproto.OpSync:
		c.handleSync(h, req.(*zkproto.SyncRequest))
	case zkproto.OpReconfig:
		if !c.srv.cfg.ReconfigEnabled {
			// ZooKeeper's default reconfigEnabled=false: an error
			// transaction, as ZooKeeper.
			c.propose(h, &sm.Rejected{Code: zkproto.ErrReconfigDisabled}, false)
			break
		}
		c.handleReconfig(h, req.(*zkproto.ReconfigRequest))
	case zkproto.OpSASL:
		return c.handleSASL(h.Xid, req.(*zkproto.GetSASLRequest).Token)
	default:
		if readsConfig(req) {
			c.srv.freshConfig()
		}
		if deferrable(h.Type) && c.unordered.Load() == 0 && c.hasPending() {
			// Behind in-flight writes of this connection: answered at its
			// place without stopping the reader (deferred.go).
			c.deferRead(h, req)
			break
		}
		if !c.waitIdle() {
			return false
		}
		c.handleRead(h, req)
	}
	return !c.isClosed()
}

// multiOps converts a multi request's ops to commands. Read ops (or
// deleteContainer) inside a multi are a MarshallingError, as in ZooKeeper.
func multiOps(r *zkproto.MultiRequest) ([]sm.Op, bool) {
	ops := make([]sm.Op, 0, len(r.Ops))
	// The setData ops share one slice, never grown past its capacity (so
	// none moves): one allocation for a multi of 1,000 setData, not 1,000.
	var sets []sm.SetData
	for _, op := range r.Ops {
		switch q := op.Request.(type) {
		case *zkproto.CreateRequest:
			// ZooKeeper rebuilds each create of a multi from its flags
			// (MultiOperationRecord → Op.create): create, create2 and
			// createContainer all become create, or createContainer for
			// flag 4 (so create2 results carry no stat in 3.8). TTL flags
			// without a TTL record cannot be served.
			code, ok := multiCreateOp(q.Flags)
			if !ok {
				return nil, false
			}
			ops = append(ops, &sm.Create{OpCode: code, Path: q.Path, Data: q.Data, ACL: q.ACL, Flags: q.Flags})
		case *zkproto.CreateTTLRequest:
			// createTTL keeps its TTL only for a TTL mode; otherwise it is
			// rebuilt like any other create and the TTL is dropped.
			if m, err := zkproto.ParseCreateMode(q.Flags); err == nil && m.IsTTL() {
				ops = append(ops, &sm.Create{OpCode: zkproto.OpCreateTTL, Path: q.Path, Data: q.Data, ACL: q.ACL, Flags: q.Flags, TTL: q.TTL})
				continue
			}
			code, _ := multiCreateOp(q.Flags)
			ops = append(ops, &sm.Create{OpCode: code, Path: q.Path, Data: q.Data, ACL: q.ACL, Flags: q.Flags})
		case *zkproto.DeleteRequest:
			if op.Type != zkproto.OpDelete {
				return nil, false
			}
			ops = append(ops, &sm.Delete{Path: q.Path, Version: q.Version})
		case *zkproto.SetDataRequest:
			if sets == nil {
				sets = make([]sm.SetData, 0, len(r.Ops)-len(ops))
			}
			sets = append(sets, sm.SetData{Path: q.Path, Data: q.Data, Version: q.Version})
			ops = append(ops, &sets[len(sets)-1])
		case *zkproto.CheckVersionRequest:
			ops = append(ops, &sm.Check{Path: q.Path, Version: q.Version})
		default:
			return nil, false
		}
	}
	return ops, true
}

// multiCreateOp is the opcode ZooKeeper's Op.Create takes for flags
// (CreateMode.fromFlag defaulting to persistent, so unknown flags stay a
// create and fail validation later). false: a TTL mode, which a create
// record cannot carry.
func multiCreateOp(flags int32) (zkproto.OpCode, bool) {
	switch zkproto.CreateMode(flags) {
	case zkproto.ModeContainer:
		return zkproto.OpCreateContainer, true
	case zkproto.ModePersistentWithTTL, zkproto.ModePersistentSequentialWithTTL:
		return 0, false
	}
	return zkproto.OpCreate, true
}

// commandHeader stamps a session write with the connection's identity, the
// next sequence number and the proposer's clock.
func (c *conn) commandHeader() sm.Header {
	c.seq++
	return sm.Header{
		Session: c.sessionID(),
		Conn:    c.id,
		Seq:     c.seq,
		Time:    wallclock.NowMilli(),
		// in ZooKeeper's set order: the `auth` ACL scheme expands in it
		Auth: zookeeperIDOrder(c.authIDs()),
	}
}

// propose sends a write to the replicated log. Its reply is filled in when
// the entry is applied; many writes may be in flight.
func (c *conn) propose(h zkproto.RequestHeader, op sm.Op, closeAfter bool) {
	// Room in the door's budget of bytes in flight first: waiting here
	// stops this connection's reads instead of overfilling the log.
	size := proposalCost(c.frameLen, op)
	c.srv.proposals.acquire(size)
	p := c.addPending(h.Xid, h.Type)
	trace := c.traceWrite(p) // nil unless write stages are traced
	op, limited := c.srv.withinLimits(op)
	cmd := &sm.Command{Header: c.commandHeader(), Op: op}
	c.srv.node.Propose(cmd, func(res *sm.Result, err error) {
		trace.result(res)
		c.srv.proposals.release(size)
		if err != nil {
			// The outcome is unknown: close, as ZooKeeper does on a lost
			// proposal (the client sees ConnectionLoss and retries).
			c.log.Warn().Err(err).Str("op", h.Type.String()).Msg("proposal failed; closing connection")
			c.abort()
			return
		}
		if res.OutOfOrder {
			c.log.Warn().Str("op", h.Type.String()).Msg("write rejected out of primary order; closing connection")
			c.abort()
			return
		}
		if res.Err == zkproto.ErrSessionMoved {
			// The session now belongs to another connection: ZooKeeper closes
			// this one instead of answering.
			c.log.Info().Str("session", sessionHex(c.sessionID())).Msg("session moved to another connection; closing this one")
			c.abort()
			return
		}
		if res.Fenced {
			c.srv.metrics.fencedWrites.Add(1)
			if !c.fencedLogged.Swap(true) {
				c.log.Warn().Str("session", sessionHex(c.sessionID())).Str("op", h.Type.String()).
					Msg("write refused by a cutover policy (NoAuth): this ZooKeeper-mode client writes a subtree moved to the native API; logged once per connection")
			}
		}
		c.srv.countQuotaRefusal(limited, res.Err)
		c.completeAndWrite(p, writeReply(h, res), closeAfter)
	})
	trace.handedOff()
}

// writeReply builds the reply of an applied write.
func writeReply(h zkproto.RequestHeader, res *sm.Result) []byte {
	if res.Err != zkproto.ErrOK {
		return replyFrame(h.Xid, res.Zxid, res.Err, nil)
	}
	var body zkproto.Record
	switch h.Type {
	case zkproto.OpCreate:
		body = &zkproto.CreateResponse{Path: res.Path}
	case zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL:
		body = &zkproto.Create2Response{Path: res.Path, Stat: statOf(res.Stat)}
	case zkproto.OpSetData:
		body = &zkproto.SetDataResponse{Stat: statOf(res.Stat)}
	case zkproto.OpSetACL:
		body = &zkproto.SetACLResponse{Stat: statOf(res.Stat)}
	case zkproto.OpMulti:
		mr := &zkproto.MultiResponse{Results: make([]zkproto.MultiResult, 0, len(res.Ops))}
		var sets []zkproto.SetDataResponse // one allocation for a multi's setData results
		for _, o := range res.Ops {
			if o.Type == zkproto.OpSetData {
				if sets == nil {
					sets = make([]zkproto.SetDataResponse, 0, len(res.Ops)-len(mr.Results))
				}
				sets = append(sets, zkproto.SetDataResponse{Stat: statOf(o.Stat)})
				mr.Results = append(mr.Results, zkproto.MultiResult{Type: o.Type, Response: &sets[len(sets)-1]})
				continue
			}
			mr.Results = append(mr.Results, multiResult(o))
		}
		body = mr
	}
	return replyFrame(h.Xid, res.Zxid, zkproto.ErrOK, body)
}

func multiResult(o sm.OpResult) zkproto.MultiResult {
	switch o.Type {
	case zkproto.OpCreate:
		return zkproto.MultiResult{Type: o.Type, Response: &zkproto.CreateResponse{Path: o.Path}}
	case zkproto.OpCreate2:
		return zkproto.MultiResult{Type: o.Type, Response: &zkproto.Create2Response{Path: o.Path, Stat: statOf(o.Stat)}}
	case zkproto.OpSetData:
		return zkproto.MultiResult{Type: o.Type, Response: &zkproto.SetDataResponse{Stat: statOf(o.Stat)}}
	case zkproto.OpDelete, zkproto.OpCheck:
		return zkproto.MultiResult{Type: o.Type}
	}
	return zkproto.ErrorResult(o.Err)
}

func statOf(s *zkproto.Stat) zkproto.Stat {
	if s == nil {
		return zkproto.Stat{}
	}
	return *s
}

// handleSync answers sync once the local replica has applied everything
// committed when the sync was received (a Raft ReadIndex).
func (c *conn) handleSync(h zkproto.RequestHeader, r *zkproto.SyncRequest) {
	p := c.addPending(h.Xid, h.Type)
	c.unordered.Add(1)
	c.srv.node.ReadIndex(func(err error) {
		defer c.unordered.Add(-1)
		if err != nil {
			c.log.Warn().Err(err).Msg("sync failed; closing connection")
			c.abort()
			return
		}
		c.complete(p, replyFrame(h.Xid, c.srv.lastZxid(), zkproto.ErrOK, &zkproto.SyncResponse{Path: r.Path}), false)
	})
}

// handleAuth adds an identity to the connection. Auth replies bypass the
// pipeline in ZooKeeper and echo the request's xid.
func (c *conn) handleAuth(xid int32, a *zkproto.AuthPacket) bool {
	var add []zkproto.Id
	switch a.Scheme {
	case "digest":
		if a.Auth == nil {
			// ZooKeeper's provider throws on a null buffer: AuthFailed.
			return c.authFailed(xid, a.Scheme)
		}
		id := DigestID(a.Auth)
		add = append(add, zkproto.Id{Scheme: "digest", ID: id})
		if c.srv.cfg.SuperDigest != "" && id == c.srv.cfg.SuperDigest {
			add = append(add, zkproto.Id{Scheme: "super", ID: ""})
		}
	case "ip":
		add = append(add, zkproto.Id{Scheme: "ip", ID: c.ip})
	default:
		return c.authFailed(xid, a.Scheme)
	}
	c.stats.mu.Lock()
	ids := append([]zkproto.Id(nil), c.auth...)
	for _, id := range add {
		if !containsID(ids, id) {
			ids = append(ids, id)
		}
	}
	c.auth = ids
	c.stats.mu.Unlock()
	c.enqueue(replyFrame(xid, 0, zkproto.ErrOK, nil))
	return true
}

// authFailed answers AuthFailed and closes, as ZooKeeper does.
func (c *conn) authFailed(xid int32, scheme string) bool {
	c.log.Info().Str("scheme", scheme).Msg("auth failed or unsupported scheme; answering AuthFailed and closing")
	c.srv.metrics.authFailed.Add(1)
	c.enqueue(replyFrame(xid, 0, zkproto.ErrAuthFailed, nil))
	c.closeAfterFlush()
	return false
}

func containsID(ids []zkproto.Id, id zkproto.Id) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// DigestID is DigestAuthenticationProvider's id for "user:password":
// user + ":" + base64(sha1("user:password")).
// ZooKeeper first decodes the bytes to a Java string, so malformed UTF-8
// becomes U+FFFD in both the user name and the hashed text.
func DigestID(auth []byte) string {
	text := javaUTF8(auth)
	user, _, _ := strings.Cut(text, ":")
	sum := sha1.Sum([]byte(text))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// handleRead answers a read from the local replica. It runs with the apply
// lock held shared, so the view, the watch registration and the queued reply
// are atomic with respect to applies and their watch events.
func (c *conn) handleRead(h zkproto.RequestHeader, req zkproto.Record) {
	p := c.addPending(h.Xid, h.Type) // may wait: before the lock
	c.srv.node.LockReads()
	defer c.srv.node.UnlockReads()
	v, err := c.srv.node.LockedView()
	if err != nil {
		c.log.Error().Err(err).Msg("read view failed; closing connection")
		c.abort()
		return
	}
	defer v.Close()
	zxid, _ := v.LastZxid()
	code, body := c.read(v, h.Type, req, c.authIDs())
	c.complete(p, replyFrame(h.Xid, zxid, code, body), false)
}

// read answers one read op from v with the connection's identities ids.
func (c *conn) read(v *sm.View, op zkproto.OpCode, req zkproto.Record, ids []zkproto.Id) (zkproto.ErrCode, zkproto.Record) {
	super := c.srv.cfg.SuperDigest
	switch op {
	case zkproto.OpExists:
		r := req.(*zkproto.ExistsRequest)
		if strings.IndexByte(r.Path, 0) >= 0 {
			return zkproto.ErrBadArguments, nil
		}
		n, err := v.Get(nodePath(r.Path))
		if err != nil {
			if code := errCode(err); code != zkproto.ErrNoNode {
				return code, nil
			}
			if r.Watch { // exists on a missing node leaves a watch for NodeCreated
				c.srv.watches.add(c, r.Path, watchData)
			}
			return zkproto.ErrNoNode, nil
		}
		if !sm.CheckACL(n.ACL, zkproto.PermRead, ids, super) {
			return zkproto.ErrNoAuth, nil
		}
		if r.Watch {
			c.srv.watches.add(c, r.Path, watchData)
		}
		c.srv.overlayConfig(r.Path, n)
		return zkproto.ErrOK, &zkproto.ExistsResponse{Stat: n.Stat}
	case zkproto.OpGetData:
		r := req.(*zkproto.GetDataRequest)
		n, code := c.readable(v, r.Path, ids)
		if code != zkproto.ErrOK {
			return code, nil
		}
		if r.Watch {
			c.srv.watches.add(c, r.Path, watchData)
		}
		return zkproto.ErrOK, &zkproto.GetDataResponse{Data: n.Data, Stat: n.Stat}
	case zkproto.OpGetChildren, zkproto.OpGetChildren2:
		path, watch := childrenArgs(req)
		names, stat, code := c.children(v, path, ids)
		if code != zkproto.ErrOK {
			return code, nil
		}
		if watch {
			c.srv.watches.add(c, path, watchChild)
		}
		if op == zkproto.OpGetChildren {
			return zkproto.ErrOK, &zkproto.GetChildrenResponse{Children: names}
		}
		return zkproto.ErrOK, &zkproto.GetChildren2Response{Children: names, Stat: stat}
	case zkproto.OpGetACL:
		r := req.(*zkproto.GetACLRequest)
		n, err := v.Get(nodePath(r.Path))
		if err != nil {
			return errCode(err), nil
		}
		admin := sm.CheckACL(n.ACL, zkproto.PermAdmin, ids, super)
		if !admin && !sm.CheckACL(n.ACL, zkproto.PermRead, ids, super) {
			return zkproto.ErrNoAuth, nil
		}
		acl := n.ACL
		if !admin {
			acl = maskDigests(acl)
		}
		c.srv.overlayConfig(r.Path, n)
		return zkproto.ErrOK, &zkproto.GetACLResponse{ACL: acl, Stat: n.Stat}
	case zkproto.OpGetAllChildrenNumber:
		r := req.(*zkproto.GetAllChildrenNumberRequest)
		if _, code := c.readable(v, r.Path, ids); code != zkproto.ErrOK {
			return code, nil
		}
		total, err := v.AllChildrenNumber(nodePath(r.Path))
		if err != nil {
			return errCode(err), nil
		}
		if r.Path == "" {
			// ZooKeeper counts the keys under prefix "/": "/" itself too
			total++
		}
		return zkproto.ErrOK, &zkproto.GetAllChildrenNumberResponse{TotalNumber: int32(total)}
	case zkproto.OpGetEphemerals:
		r := req.(*zkproto.GetEphemeralsRequest)
		all, err := v.Ephemerals(c.sessionID())
		if err != nil {
			return errCode(err), nil
		}
		// Ordered over the whole set, then filtered, as ZooKeeper does.
		all = zookeeperEphemeralOrder(all, func(p string) int64 {
			st, err := v.Exists(p)
			if err != nil {
				return 0
			}
			return st.Czxid
		})
		prefix := strings.TrimSpace(r.PrefixPath)
		out := make([]string, 0, len(all))
		for _, p := range all {
			if prefix == "" || prefix == "/" || strings.HasPrefix(p, r.PrefixPath) {
				out = append(out, p)
			}
		}
		return zkproto.ErrOK, &zkproto.GetEphemeralsResponse{Ephemerals: out}
	case zkproto.OpWhoAmI:
		return zkproto.ErrOK, &zkproto.WhoAmIResponse{ClientInfo: clientInfos(ids)}
	case zkproto.OpMultiRead:
		return c.multiRead(v, req.(*zkproto.MultiRequest), ids)
	case zkproto.OpSetWatches:
		r := req.(*zkproto.SetWatches)
		c.setWatches(v, r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches, nil, nil)
		return zkproto.ErrOK, nil
	case zkproto.OpSetWatches2:
		r := req.(*zkproto.SetWatches2)
		c.setWatches(v, r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches, r.PersistentWatches, r.PersistentRecursiveWatches)
		return zkproto.ErrOK, nil
	case zkproto.OpAddWatch:
		r := req.(*zkproto.AddWatchRequest)
		switch r.Mode {
		case zkproto.AddWatchPersistent:
			c.srv.watches.add(c, r.Path, watchPersist)
		case zkproto.AddWatchPersistentRecursive:
			c.srv.watches.add(c, r.Path, watchRecursive)
		default:
			return zkproto.ErrMarshallingError, nil
		}
		return zkproto.ErrOK, &zkproto.ErrorResponse{Err: zkproto.ErrOK}
	case zkproto.OpCheckWatches, zkproto.OpRemoveWatches:
		path, t := watchArgs(req)
		if _, ok := kindsFor(t); !ok {
			return zkproto.ErrMarshallingError, nil
		}
		var found bool
		if op == zkproto.OpCheckWatches {
			found = c.srv.watches.check(c, path, t)
		} else {
			found = c.srv.watches.remove(c, path, t)
		}
		if !found {
			return zkproto.ErrNoWatcher, nil
		}
		return zkproto.ErrOK, nil
	}
	return zkproto.ErrUnimplemented, nil
}

// nodePath is the node a read's path names: ZooKeeper's node table holds
// the root under "" as well as "/", so reads of "" see the root.
func nodePath(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func childrenArgs(req zkproto.Record) (string, bool) {
	if r, ok := req.(*zkproto.GetChildrenRequest); ok {
		return r.Path, r.Watch
	}
	r := req.(*zkproto.GetChildren2Request)
	return r.Path, r.Watch
}

func watchArgs(req zkproto.Record) (string, zkproto.WatcherType) {
	if r, ok := req.(*zkproto.CheckWatchesRequest); ok {
		return r.Path, r.Type
	}
	r := req.(*zkproto.RemoveWatchesRequest)
	return r.Path, r.Type
}

// readable returns the node at path if the identities have READ on it:
// NoNode or NoAuth otherwise (the check every read but exists and getACL makes).
func (c *conn) readable(v *sm.View, path string, ids []zkproto.Id) (*sm.Node, zkproto.ErrCode) {
	n, err := v.Get(nodePath(path))
	if err != nil {
		return nil, errCode(err)
	}
	if !sm.CheckACL(n.ACL, zkproto.PermRead, ids, c.srv.cfg.SuperDigest) {
		return nil, zkproto.ErrNoAuth
	}
	c.srv.overlayConfig(path, n)
	return n, zkproto.ErrOK
}

// children reads a node's children after checking READ on it.
func (c *conn) children(v *sm.View, path string, ids []zkproto.Id) ([]string, zkproto.Stat, zkproto.ErrCode) {
	if _, code := c.readable(v, path, ids); code != zkproto.ErrOK {
		return nil, zkproto.Stat{}, code
	}
	names, stat, err := v.Children(nodePath(path))
	if err != nil {
		return nil, zkproto.Stat{}, errCode(err)
	}
	if names == nil {
		names = []string{}
	}
	return names, stat, zkproto.ErrOK
}

// multiRead evaluates each op on its own: no atomicity, no watches.
func (c *conn) multiRead(v *sm.View, r *zkproto.MultiRequest, ids []zkproto.Id) (zkproto.ErrCode, zkproto.Record) {
	out := &zkproto.MultiResponse{Results: make([]zkproto.MultiResult, 0, len(r.Ops))}
	for _, op := range r.Ops {
		switch q := op.Request.(type) {
		case *zkproto.GetDataRequest:
			if n, code := c.readable(v, q.Path, ids); code != zkproto.ErrOK {
				out.Results = append(out.Results, zkproto.ErrorResult(code))
			} else {
				out.Results = append(out.Results, zkproto.MultiResult{Type: zkproto.OpGetData, Response: &zkproto.GetDataResponse{Data: n.Data, Stat: n.Stat}})
			}
		case *zkproto.GetChildrenRequest:
			names, _, code := c.children(v, q.Path, ids)
			if code != zkproto.ErrOK {
				out.Results = append(out.Results, zkproto.ErrorResult(code))
				continue
			}
			out.Results = append(out.Results, zkproto.MultiResult{Type: zkproto.OpGetChildren, Response: &zkproto.GetChildrenResponse{Children: names}})
		default:
			// A write op inside multiRead: ZooKeeper rejects the whole
			// request with MarshallingError.
			return zkproto.ErrMarshallingError, nil
		}
	}
	return zkproto.ErrOK, out
}

// setWatches re-registers a reconnecting client's watches, first sending
// the catch-up events ZooKeeper's DataTree.setWatches sends: changes since
// relativeZxid fire at once instead of registering. Persistent watches get
// no catch-up event.
func (c *conn) setWatches(v *sm.View, rel int64, data, exist, child, persistent, recursive []string) {
	ev := func(t zkproto.EventType, p string) {
		c.deliver(zkproto.WatcherEvent{Type: t, State: zkproto.StateSyncConnected, Path: p})
	}
	for _, p := range data {
		st, err := v.Exists(p)
		switch {
		case err != nil:
			ev(zkproto.EventNodeDeleted, p)
		case st.Mzxid > rel:
			ev(zkproto.EventNodeDataChanged, p)
		default:
			c.srv.watches.add(c, p, watchData)
		}
	}
	for _, p := range exist {
		if _, err := v.Exists(p); err == nil {
			ev(zkproto.EventNodeCreated, p)
		} else {
			c.srv.watches.add(c, p, watchData)
		}
	}
	for _, p := range child {
		st, err := v.Exists(p)
		switch {
		case err != nil:
			ev(zkproto.EventNodeDeleted, p)
		case st.Pzxid > rel:
			ev(zkproto.EventNodeChildrenChanged, p)
		default:
			c.srv.watches.add(c, p, watchChild)
		}
	}
	for _, p := range persistent {
		c.srv.watches.add(c, p, watchPersist)
	}
	for _, p := range recursive {
		c.srv.watches.add(c, p, watchRecursive)
	}
}

// maskDigests hides digest hashes from readers without ADMIN ("user:x").
func maskDigests(acl []zkproto.ACL) []zkproto.ACL {
	out := make([]zkproto.ACL, len(acl))
	for i, a := range acl {
		out[i] = a
		if a.ID.Scheme == "digest" {
			user, _, _ := strings.Cut(a.ID.ID, ":")
			out[i].ID.ID = user + ":x"
		}
	}
	return out
}

// clientInfos is whoAmI's answer: one (scheme, user) per identity, in the
// order ZooKeeper's hash set of auth ids iterates them.
func clientInfos(ids []zkproto.Id) []zkproto.ClientInfo {
	out := make([]zkproto.ClientInfo, 0, len(ids))
	for _, id := range zookeeperIDOrder(ids) {
		switch id.Scheme {
		case "digest":
			user, _, _ := strings.Cut(id.ID, ":")
			out = append(out, zkproto.ClientInfo{AuthScheme: "digest", User: user})
		case "super":
			// No provider names a super id: ZooKeeper answers "super:"
			// for the x509 super user's super:<DN> too.
			out = append(out, zkproto.ClientInfo{AuthScheme: "super"})
		default:
			out = append(out, zkproto.ClientInfo{AuthScheme: id.Scheme, User: id.ID})
		}
	}
	return out
}

// errCode turns a read error into the code to answer; anything that is not
// a ZooKeeper code is a system error on our side.
func errCode(err error) zkproto.ErrCode {
	if code, ok := err.(zkproto.ErrCode); ok {
		return code
	}
	return zkproto.ErrSystemError
}
