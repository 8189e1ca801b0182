package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
)

// DefaultAddr is the native API's default address (zkbridge server
// --native-addr).
const DefaultAddr = "127.0.0.1:2191"

// Defaults of the options.
const (
	DefaultDialTimeout    = 5 * time.Second
	DefaultFailoverWindow = 10 * time.Second
)

// maxMessage bounds a received message: a snapshot chunk is at most 1 MiB
// of data plus paths, a znode at most jute.maxbuffer (1 MiB by default).
const maxMessage = 64 << 20

// Option configures Dial.
type Option func(*options)

type options struct {
	tenant         string
	tls            *tls.Config
	dialTimeout    time.Duration
	failoverWindow time.Duration
}

// WithTenant names the tenant of every call ("" is the default tenant, the
// only one today).
func WithTenant(t string) Option { return func(o *options) { o.tenant = t } }

// WithTLS connects with TLS (nil: plaintext, the default).
func WithTLS(c *tls.Config) Option { return func(o *options) { o.tls = c } }

// WithDialTimeout bounds Dial's wait for a first node to answer (default
// 5 s).
func WithDialTimeout(d time.Duration) Option { return func(o *options) { o.dialTimeout = d } }

// WithFailoverWindow bounds how long a call keeps moving between nodes
// that are unavailable (all of them, during an election) before it
// returns the last error; the call's context bounds it too (default 10 s).
func WithFailoverWindow(d time.Duration) Option { return func(o *options) { o.failoverWindow = d } }

// Client talks to the nodes of one zkbridge cluster through their native
// API. It is safe for concurrent use.
type Client struct {
	targets []string
	conns   []*grpc.ClientConn
	stubs   []zkbridgev1.BridgeClient
	opts    options
	cur     atomic.Int64 // the node to try first
	closeMu sync.Once
}

// Dial connects to the native API at targets (host:port of one or more
// nodes) and returns once one of them accepts a connection, or fails when
// none does within the dial timeout (at once when every one refuses).
func Dial(ctx context.Context, targets []string, opts ...Option) (*Client, error) {
	o := options{dialTimeout: DefaultDialTimeout, failoverWindow: DefaultFailoverWindow}
	for _, f := range opts {
		f(&o)
	}
	var clean []string
	for _, t := range targets {
		if t = strings.TrimSpace(t); t != "" {
			clean = append(clean, t)
		}
	}
	if len(clean) == 0 {
		return nil, errors.New("dial: no target address (want host:port of a node's native API, default " + DefaultAddr + ")")
	}
	creds := insecure.NewCredentials()
	if o.tls != nil {
		creds = credentials.NewTLS(o.tls)
	}
	c := &Client{targets: clean, opts: o}
	for _, t := range clean {
		cc, err := grpc.NewClient(t, grpc.WithTransportCredentials(creds),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)))
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("dial %s: %w", t, err)
		}
		c.conns = append(c.conns, cc)
		c.stubs = append(c.stubs, zkbridgev1.NewBridgeClient(cc))
		cc.Connect()
	}
	if err := c.waitReady(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// waitReady waits until a connection is ready (it becomes the first one
// tried) or every one has failed once.
func (c *Client) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.dialTimeout)
	defer cancel()
	failed := make([]bool, len(c.conns))
	for {
		nfailed := 0
		for i, cc := range c.conns {
			switch cc.GetState() {
			case connectivity.Ready:
				c.cur.Store(int64(i))
				return nil
			case connectivity.TransientFailure, connectivity.Shutdown:
				failed[i] = true
			}
			if failed[i] {
				nfailed++
			}
		}
		if nfailed == len(c.conns) {
			return c.unreachable(ctx, "refused the connection")
		}
		select {
		case <-ctx.Done():
			return c.unreachable(ctx, fmt.Sprintf("did not answer within %v", c.opts.dialTimeout))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// unreachable builds Dial's error, with the first node's own reason.
func (c *Client) unreachable(ctx context.Context, what string) error {
	detail := ""
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(c.conns[0]).Check(hctx, &healthpb.HealthCheckRequest{}); err != nil {
		detail = ": " + status.Convert(err).Message()
	}
	return fmt.Errorf("no zkbridge native API at %s: every node %s%s (is zkbridge running with --native-addr at that address?)",
		strings.Join(c.targets, ","), what, detail)
}

// Close closes the connections. Leases and watchers of the client stop
// working; close them first.
func (c *Client) Close() error {
	c.closeMu.Do(func() {
		for _, cc := range c.conns {
			cc.Close()
		}
	})
	return nil
}

// Targets returns the node addresses the client was dialled with.
func (c *Client) Targets() []string { return append([]string(nil), c.targets...) }

// Tenant returns the tenant of the client's calls.
func (c *Client) Tenant() string { return c.opts.tenant }

func (c *Client) first() int { return int(c.cur.Load()) % len(c.stubs) }

// retryable reports whether err says the node could not serve the call at
// all (it may go to another node).
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted:
		return true
	}
	return false
}

// notSent reports whether an Unavailable error proves the node did
// nothing: it could not be reached, or refused before any proposal because
// it has no Raft leader.
func notSent(err error) bool {
	if status.Code(err) != codes.Unavailable {
		return false
	}
	m := status.Convert(err).Message()
	for _, s := range []string{"no Raft leader", "Error while dialing", "connect: connection refused", "produced zero addresses"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// call runs fn on one node after another while it fails with an error
// that allows it (all of them for an idempotent call; a refusal before
// any effect for a write), for at most the failover window. It returns
// the index of the node that answered.
func (c *Client) call(ctx context.Context, idempotent bool, fn func(ctx context.Context, stub zkbridgev1.BridgeClient) error) (int, error) {
	return c.callFrom(ctx, c.first(), idempotent, fn)
}

// callFrom is call starting at node idx.
func (c *Client) callFrom(ctx context.Context, idx int, idempotent bool, fn func(ctx context.Context, stub zkbridgev1.BridgeClient) error) (int, error) {
	start := time.Now()
	backoff := 50 * time.Millisecond
	var err error
	for round := 0; ; round++ {
		for i := 0; i < len(c.stubs); i++ {
			n := (idx + i) % len(c.stubs)
			err = fn(ctx, c.stubs[n])
			if err == nil {
				c.cur.Store(int64(n))
				return n, nil
			}
			if ctx.Err() != nil {
				return n, err
			}
			if idempotent && !retryable(err) || !idempotent && !notSent(err) {
				return n, err
			}
		}
		if time.Since(start)+backoff > c.opts.failoverWindow {
			return idx, withHint(err, c.targets)
		}
		select {
		case <-ctx.Done():
			return idx, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// withHint adds what to do to an Unavailable error that every node gave.
func withHint(err error, targets []string) error {
	if status.Code(err) != codes.Unavailable {
		return err
	}
	hint := "is zkbridge running there with --native-addr, and does the cluster have a quorum (zkbridge native status)?"
	return status.Errorf(codes.Unavailable, "%s (no node of %s could serve it: %s)", status.Convert(err).Message(), strings.Join(targets, ","), hint)
}

// next is the node after n.
func (c *Client) next(n int) int { return (n + 1) % len(c.stubs) }

// streamContext derives the context of a long-lived stream on node n: it
// is cancelled when the node's connection stops being ready, which is how
// a node that shuts down gracefully (GOAWAY: it takes no new streams and
// waits for the open ones to end) shows: the stream then moves to another
// node instead of holding the shutdown up.
func (c *Client) streamContext(ctx context.Context, n int) (context.Context, context.CancelFunc) {
	sctx, cancel := context.WithCancel(ctx)
	cc := c.conns[n]
	go func() {
		state := cc.GetState()
		ready := state == connectivity.Ready
		for {
			if !cc.WaitForStateChange(sctx, state) {
				return // the stream ended
			}
			state = cc.GetState()
			switch {
			case state == connectivity.Ready:
				ready = true
			case ready || state == connectivity.Shutdown:
				cancel()
				return
			}
		}
	}()
	return sctx, cancel
}
