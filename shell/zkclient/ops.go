package zkclient

import (
	"fmt"

	"github.com/zkbridge/zkbridge/zkproto"
)

// ConfigNode is where servers publish the ensemble's dynamic config; it
// is never under the chroot.
const ConfigNode = "/zookeeper/config"

// Create creates path and returns the created path (with a sequential
// suffix where mode asks for one) and its stat. ttl is used by the TTL
// modes only.
func (c *Client) Create(path string, data []byte, acl []zkproto.ACL, mode zkproto.CreateMode, ttl int64) (string, zkproto.Stat, error) {
	check := path
	if mode.IsSequential() {
		check += "1"
	}
	if err := ValidatePath(check); err != nil {
		return "", zkproto.Stat{}, err
	}
	if len(acl) == 0 {
		return "", zkproto.Stat{}, &Error{Code: zkproto.ErrInvalidACL, NullPath: true}
	}
	var resp zkproto.Create2Response
	var err error
	switch {
	case mode.IsTTL():
		err = c.do(zkproto.OpCreateTTL, path, &zkproto.CreateTTLRequest{Path: c.serverPath(path), Data: data, ACL: acl,
			Flags: int32(mode), TTL: ttl}, &resp, nil)
	case mode.IsContainer():
		err = c.do(zkproto.OpCreateContainer, path, &zkproto.CreateRequest{Path: c.serverPath(path), Data: data, ACL: acl,
			Flags: int32(mode)}, &resp, nil)
	default:
		err = c.do(zkproto.OpCreate2, path, &zkproto.CreateRequest{Path: c.serverPath(path), Data: data, ACL: acl,
			Flags: int32(mode)}, &resp, nil)
	}
	if err != nil {
		return "", zkproto.Stat{}, err
	}
	return c.stripChroot(resp.Path), resp.Stat, nil
}

// Delete deletes path if its version is version (-1: any).
func (c *Client) Delete(path string, version int32) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	return c.do(zkproto.OpDelete, path, &zkproto.DeleteRequest{Path: c.serverPath(path), Version: version}, nil, nil)
}

// Exists returns path's stat, or nil if it does not exist. With watch, a
// data watch (or an exist watch on a missing node) is left.
func (c *Client) Exists(path string, watch bool) (*zkproto.Stat, error) {
	if err := ValidatePath(path); err != nil {
		return nil, err
	}
	var resp zkproto.ExistsResponse
	err := c.do(zkproto.OpExists, path, &zkproto.ExistsRequest{Path: c.serverPath(path), Watch: watch}, &resp,
		c.register(watch, func(code zkproto.ErrCode) map[string]bool {
			switch code {
			case zkproto.ErrOK:
				return c.watches.data
			case zkproto.ErrNoNode:
				return c.watches.exist
			}
			return nil
		}, path))
	if Code(err) == zkproto.ErrNoNode {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &resp.Stat, nil
}

// register returns the reply hook that records a watch in the map pick
// chooses for the reply's code (nil: none), or nil without watch.
func (c *Client) register(watch bool, pick func(zkproto.ErrCode) map[string]bool, path string) func(zkproto.ErrCode) {
	if !watch {
		return nil
	}
	return func(code zkproto.ErrCode) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if m := pick(code); m != nil {
			m[path] = true
		}
	}
}

func (c *Client) onOK(m func() map[string]bool) func(zkproto.ErrCode) map[string]bool {
	return func(code zkproto.ErrCode) map[string]bool {
		if code == zkproto.ErrOK {
			return m()
		}
		return nil
	}
}

// Get returns path's data (nil for a node created without data) and stat.
func (c *Client) Get(path string, watch bool) ([]byte, zkproto.Stat, error) {
	if err := ValidatePath(path); err != nil {
		return nil, zkproto.Stat{}, err
	}
	var resp zkproto.GetDataResponse
	err := c.do(zkproto.OpGetData, path, &zkproto.GetDataRequest{Path: c.serverPath(path), Watch: watch}, &resp,
		c.register(watch, c.onOK(func() map[string]bool { return c.watches.data }), path))
	return resp.Data, resp.Stat, err
}

// Set replaces path's data if its version is version (-1: any).
func (c *Client) Set(path string, data []byte, version int32) (zkproto.Stat, error) {
	if err := ValidatePath(path); err != nil {
		return zkproto.Stat{}, err
	}
	var resp zkproto.SetDataResponse
	err := c.do(zkproto.OpSetData, path, &zkproto.SetDataRequest{Path: c.serverPath(path), Data: data, Version: version}, &resp, nil)
	return resp.Stat, err
}

// Children returns path's children (unsorted, as the server sends them)
// and its stat; with watch, a child watch is left.
func (c *Client) Children(path string, watch bool) ([]string, zkproto.Stat, error) {
	if err := ValidatePath(path); err != nil {
		return nil, zkproto.Stat{}, err
	}
	var resp zkproto.GetChildren2Response
	err := c.do(zkproto.OpGetChildren2, path, &zkproto.GetChildren2Request{Path: c.serverPath(path), Watch: watch}, &resp,
		c.register(watch, c.onOK(func() map[string]bool { return c.watches.child }), path))
	return resp.Children, resp.Stat, err
}

// GetACL returns path's ACL and stat.
func (c *Client) GetACL(path string) ([]zkproto.ACL, zkproto.Stat, error) {
	if err := ValidatePath(path); err != nil {
		return nil, zkproto.Stat{}, err
	}
	var resp zkproto.GetACLResponse
	err := c.do(zkproto.OpGetACL, path, &zkproto.GetACLRequest{Path: c.serverPath(path)}, &resp, nil)
	return resp.ACL, resp.Stat, err
}

// SetACL replaces path's ACL if its ACL version is version (-1: any).
func (c *Client) SetACL(path string, acl []zkproto.ACL, version int32) (zkproto.Stat, error) {
	if err := ValidatePath(path); err != nil {
		return zkproto.Stat{}, err
	}
	if len(acl) == 0 {
		return zkproto.Stat{}, &Error{Code: zkproto.ErrInvalidACL, Path: path}
	}
	var resp zkproto.SetACLResponse
	err := c.do(zkproto.OpSetACL, path, &zkproto.SetACLRequest{Path: c.serverPath(path), ACL: acl, Version: version}, &resp, nil)
	return resp.Stat, err
}

// Sync makes the connected server catch up with the leader on path.
func (c *Client) Sync(path string) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	var resp zkproto.SyncResponse
	return c.do(zkproto.OpSync, path, &zkproto.SyncRequest{Path: c.serverPath(path)}, &resp, nil)
}

// Ephemerals lists the session's ephemeral nodes whose path starts with prefix.
func (c *Client) Ephemerals(prefix string) ([]string, error) {
	if err := ValidatePath(prefix); err != nil {
		return nil, err
	}
	var resp zkproto.GetEphemeralsResponse
	if err := c.do(zkproto.OpGetEphemerals, prefix, &zkproto.GetEphemeralsRequest{PrefixPath: c.serverPath(prefix)}, &resp, nil); err != nil {
		return nil, err
	}
	out := make([]string, len(resp.Ephemerals))
	for i, p := range resp.Ephemerals {
		out[i] = c.stripChroot(p)
	}
	return out, nil
}

// AllChildrenNumber counts every node below path.
func (c *Client) AllChildrenNumber(path string) (int32, error) {
	if err := ValidatePath(path); err != nil {
		return 0, err
	}
	var resp zkproto.GetAllChildrenNumberResponse
	err := c.do(zkproto.OpGetAllChildrenNumber, path, &zkproto.GetAllChildrenNumberRequest{Path: c.serverPath(path)}, &resp, nil)
	return resp.TotalNumber, err
}

// WhoAmI lists the identities the server knows the session by.
func (c *Client) WhoAmI() ([]zkproto.ClientInfo, error) {
	var resp zkproto.WhoAmIResponse
	err := c.do(zkproto.OpWhoAmI, "", &zkproto.Empty{}, &resp, nil)
	return resp.ClientInfo, err
}

// AddAuth adds an identity to the session (sent now if connected, and
// again on every reconnect). A rejected identity ends the client with an
// AuthFailed event, as in the Java client.
func (c *Client) AddAuth(scheme string, auth []byte) error {
	c.mu.Lock()
	c.auths = append(c.auths, authInfo{scheme: scheme, auth: auth})
	nc := c.conn
	c.mu.Unlock()
	if nc == nil {
		return nil
	}
	if err := c.write(nc, zkproto.XidAuth, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: scheme, Auth: auth}); err != nil {
		nc.Close()
	}
	return nil
}

// AddWatch sets a persistent (optionally recursive) watch on path.
func (c *Client) AddWatch(path string, mode zkproto.AddWatchMode) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	var resp zkproto.ErrorResponse
	return c.do(zkproto.OpAddWatch, path, &zkproto.AddWatchRequest{Path: c.serverPath(path), Mode: mode}, &resp,
		c.register(true, c.onOK(func() map[string]bool {
			if mode == zkproto.AddWatchPersistentRecursive {
				return c.watches.recursive
			}
			return c.watches.persistent
		}), path))
}

// RemoveWatches removes the session's watches of type t on path, on the
// server too unless local. The removed watches produce their *WatchRemoved
// events. No watch of that type: NoWatcher.
func (c *Client) RemoveWatches(path string, t zkproto.WatcherType, local bool) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	c.mu.Lock()
	maps, events := c.watches.removable(t, path)
	c.mu.Unlock()
	if len(maps) == 0 {
		return &Error{Code: zkproto.ErrNoWatcher, Path: path}
	}
	if !local {
		if err := c.do(zkproto.OpRemoveWatches, path, &zkproto.RemoveWatchesRequest{Path: c.serverPath(path), Type: t}, nil, nil); err != nil {
			return err
		}
	}
	c.mu.Lock()
	for _, m := range maps {
		delete(m, path)
	}
	c.mu.Unlock()
	for _, e := range events {
		c.emit(Event{Type: e, State: zkproto.StateSyncConnected, Path: path})
	}
	return nil
}

// Config returns the ensemble's dynamic config (/zookeeper/config).
func (c *Client) Config(watch bool) ([]byte, zkproto.Stat, error) {
	var resp zkproto.GetDataResponse
	err := c.do(zkproto.OpGetData, ConfigNode, &zkproto.GetDataRequest{Path: ConfigNode, Watch: watch}, &resp,
		c.register(watch, c.onOK(func() map[string]bool { return c.watches.data }), c.stripChroot(ConfigNode)))
	return resp.Data, resp.Stat, err
}

// Reconfig changes the ensemble: joining and leaving (incremental) or
// members (the whole new membership); "" is absent. fromConfig is the
// config version it applies to (-1: any).
func (c *Client) Reconfig(joining, leaving, members string, fromConfig int64) ([]byte, zkproto.Stat, error) {
	var resp zkproto.GetDataResponse
	err := c.do(zkproto.OpReconfig, "", &zkproto.ReconfigRequest{JoiningServers: joining, LeavingServers: leaving,
		NewMembers: members, CurConfigID: fromConfig}, &resp, nil)
	return resp.Data, resp.Stat, err
}

// Multi runs ops atomically. Paths in ops are client paths. A failed
// multi returns the results and an *Error with the first failure's code.
func (c *Client) Multi(ops []zkproto.MultiOp) ([]zkproto.MultiResult, error) {
	req := zkproto.MultiRequest{Ops: make([]zkproto.MultiOp, len(ops))}
	for i, op := range ops {
		switch r := op.Request.(type) {
		case *zkproto.DeleteRequest:
			cp := *r
			cp.Path = c.serverPath(r.Path)
			req.Ops[i] = zkproto.MultiOp{Type: op.Type, Request: &cp}
		case *zkproto.CreateRequest:
			cp := *r
			cp.Path = c.serverPath(r.Path)
			req.Ops[i] = zkproto.MultiOp{Type: op.Type, Request: &cp}
		case *zkproto.SetDataRequest:
			cp := *r
			cp.Path = c.serverPath(r.Path)
			req.Ops[i] = zkproto.MultiOp{Type: op.Type, Request: &cp}
		case *zkproto.CheckVersionRequest:
			cp := *r
			cp.Path = c.serverPath(r.Path)
			req.Ops[i] = zkproto.MultiOp{Type: op.Type, Request: &cp}
		default:
			return nil, fmt.Errorf("zkclient: multi op %T not supported", op.Request)
		}
	}
	var resp zkproto.MultiResponse
	if err := c.do(zkproto.OpMulti, "", &req, &resp, nil); err != nil {
		return nil, err
	}
	if code := resp.FirstError(); code != zkproto.ErrOK {
		return resp.Results, &Error{Code: code}
	}
	return resp.Results, nil
}
