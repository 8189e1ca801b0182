package client

import (
	"context"
	"fmt"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
)

// ReadOption modifies Get and List.
type ReadOption func(*readOpts)

type readOpts struct{ serializable bool }

// Serializable reads the answering node's replica as it is (possibly
// stale) instead of a linearizable read.
func Serializable() ReadOption { return func(o *readOpts) { o.serializable = true } }

// WriteOption modifies Put and Delete.
type WriteOption func(*writeOpts)

type writeOpts struct {
	version    int32
	createOnly bool
}

// ExpectVersion makes Put or Delete conditional on the znode's version
// (-1, the default: any version). A mismatch is Aborted.
func ExpectVersion(v int32) WriteOption { return func(o *writeOpts) { o.version = v } }

// CreateOnly makes Put fail with FailedPrecondition when the znode exists.
func CreateOnly() WriteOption { return func(o *writeOpts) { o.createOnly = true } }

func writeOptions(opts []WriteOption) writeOpts {
	o := writeOpts{version: -1}
	for _, f := range opts {
		f(&o)
	}
	return o
}

func readOptions(opts []ReadOption) readOpts {
	var o readOpts
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Get reads one znode: its data, its stat and the replica's zxid when
// read. A missing znode is NotFound.
func (c *Client) Get(ctx context.Context, path string, opts ...ReadOption) (*zkbridgev1.GetResponse, error) {
	o := readOptions(opts)
	var out *zkbridgev1.GetResponse
	_, err := c.call(ctx, true, func(ctx context.Context, s zkbridgev1.BridgeClient) (err error) {
		out, err = s.Get(ctx, &zkbridgev1.GetRequest{Tenant: c.opts.tenant, Path: path, Serializable: o.serializable})
		return err
	})
	return out, err
}

// List reads a znode's children (sorted) and its stat.
func (c *Client) List(ctx context.Context, path string, opts ...ReadOption) (*zkbridgev1.ListResponse, error) {
	o := readOptions(opts)
	var out *zkbridgev1.ListResponse
	_, err := c.call(ctx, true, func(ctx context.Context, s zkbridgev1.BridgeClient) (err error) {
		out, err = s.List(ctx, &zkbridgev1.ListRequest{Tenant: c.opts.tenant, Path: path, Serializable: o.serializable})
		return err
	})
	return out, err
}

// Put creates a persistent znode or replaces its data (its parent must
// exist). The response says whether it was created and carries its stat.
func (c *Client) Put(ctx context.Context, path string, data []byte, opts ...WriteOption) (*zkbridgev1.PutResponse, error) {
	o := writeOptions(opts)
	var out *zkbridgev1.PutResponse
	_, err := c.call(ctx, false, func(ctx context.Context, s zkbridgev1.BridgeClient) (err error) {
		out, err = s.Put(ctx, &zkbridgev1.PutRequest{Tenant: c.opts.tenant, Path: path, Data: data, ExpectedVersion: o.version, CreateOnly: o.createOnly})
		return err
	})
	return out, err
}

// Delete removes a znode without children.
func (c *Client) Delete(ctx context.Context, path string, opts ...WriteOption) error {
	o := writeOptions(opts)
	_, err := c.call(ctx, false, func(ctx context.Context, s zkbridgev1.BridgeClient) error {
		_, err := s.Delete(ctx, &zkbridgev1.DeleteRequest{Tenant: c.opts.tenant, Path: path, ExpectedVersion: o.version})
		return err
	})
	return err
}

// AllocateID reserves count consecutive ids from the counter znode at
// counterPath (an 8-byte big-endian long, Curator's DistributedAtomicLong
// format; created at 0 when missing) and returns the first and the last.
func (c *Client) AllocateID(ctx context.Context, counterPath string, count int64) (first, last int64, err error) {
	_, err = c.call(ctx, false, func(ctx context.Context, s zkbridgev1.BridgeClient) error {
		r, err := s.AllocateID(ctx, &zkbridgev1.AllocateIDRequest{Tenant: c.opts.tenant, CounterPath: counterPath, Count: count})
		if err == nil {
			first, last = r.First, r.Last
		}
		return err
	})
	return first, last, err
}

// Status is the answering node's view of the Raft shard and of every
// member's progress.
func (c *Client) Status(ctx context.Context) (*zkbridgev1.StatusResponse, error) {
	var out *zkbridgev1.StatusResponse
	_, err := c.call(ctx, true, func(ctx context.Context, s zkbridgev1.BridgeClient) (err error) {
		out, err = s.Status(ctx, &zkbridgev1.StatusRequest{})
		return err
	})
	return out, err
}

// ListSessions lists every session of the tenant, leases included, with
// its TTL, owning replica, deadline as the answering node tracks it and its
// ephemerals.
func (c *Client) ListSessions(ctx context.Context) ([]*zkbridgev1.SessionInfo, error) {
	var out *zkbridgev1.ListSessionsResponse
	_, err := c.call(ctx, true, func(ctx context.Context, s zkbridgev1.BridgeClient) (err error) {
		out, err = s.ListSessions(ctx, &zkbridgev1.ListSessionsRequest{Tenant: c.opts.tenant})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out.Sessions, nil
}

// CutoverModes names the cutover modes as the CLI and the documentation
// write them.
var CutoverModes = map[zkbridgev1.CutoverMode]string{
	zkbridgev1.CutoverMode_CUTOVER_MODE_ZK:        "zk",
	zkbridgev1.CutoverMode_CUTOVER_MODE_NATIVE:    "native",
	zkbridgev1.CutoverMode_CUTOVER_MODE_READ_ONLY: "read-only",
}

// ParseCutoverMode reads zk, native or read-only.
func ParseCutoverMode(s string) (zkbridgev1.CutoverMode, error) {
	for m, name := range CutoverModes {
		if name == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("cutover mode %q: want zk, native or read-only", s)
}

// CutoverModeName is the mode's name (zk, native, read-only).
func CutoverModeName(m zkbridgev1.CutoverMode) string {
	if s, ok := CutoverModes[m]; ok {
		return s
	}
	return fmt.Sprintf("mode(%d)", int32(m))
}

// SetCutoverPolicy sets who may write under subtree: zk (both protocols;
// removes the policy), native (ZooKeeper-port writes are refused with
// NoAuth and counted) or read-only.
func (c *Client) SetCutoverPolicy(ctx context.Context, subtree string, mode zkbridgev1.CutoverMode) error {
	_, err := c.call(ctx, false, func(ctx context.Context, s zkbridgev1.BridgeClient) error {
		_, err := s.SetCutoverPolicy(ctx, &zkbridgev1.SetCutoverPolicyRequest{Tenant: c.opts.tenant, Subtree: subtree, Mode: mode})
		return err
	})
	return err
}

// ListCutoverPolicies lists the subtrees with a policy (zk ones have
// none).
func (c *Client) ListCutoverPolicies(ctx context.Context) ([]*zkbridgev1.CutoverPolicy, error) {
	var out []*zkbridgev1.CutoverPolicy
	_, err := c.call(ctx, true, func(ctx context.Context, s zkbridgev1.BridgeClient) error {
		r, err := s.ListCutoverPolicies(ctx, &zkbridgev1.ListCutoverPoliciesRequest{Tenant: c.opts.tenant})
		if err == nil {
			out = r.Policies
		}
		return err
	})
	return out, err
}

// Heartbeat renews a lease once (a Lease renews itself; this is for a
// lease held elsewhere, e.g. by `zkbridge native register`) and returns
// its TTL from now. NotFound: the lease is gone.
func (c *Client) Heartbeat(ctx context.Context, leaseID int64) (ttlMs int64, err error) {
	_, err = c.call(ctx, true, func(ctx context.Context, s zkbridgev1.BridgeClient) error {
		r, err := s.Heartbeat(ctx, &zkbridgev1.HeartbeatRequest{Tenant: c.opts.tenant, LeaseId: leaseID})
		if err == nil {
			ttlMs = r.TtlMs
		}
		return err
	})
	return ttlMs, err
}
