package bridgebench

import (
	"context"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcd is the same workloads against etcd: a lease with a key is a
// registration, the raw LeaseKeepAlive stream a keep-alive stream, a watch
// on a prefix the change feed, a compare-and-swap transaction on one key
// AllocateID.
type etcd struct {
	cli *clientv3.Client
}

func dialEtcd(addrs []string) (*etcd, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: addrs, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("dial etcd %v: %w", addrs, err)
	}
	return &etcd{cli: cli}, nil
}

func (e *etcd) name() string { return "etcd" }
func (e *etcd) close()       { e.cli.Close() }

func (e *etcd) grant(ctx context.Context, i int, ttl time.Duration) (int64, error) {
	l, err := e.cli.Grant(ctx, int64(ttl.Seconds()))
	if err != nil {
		return 0, err
	}
	if _, err := e.cli.Put(ctx, fmt.Sprintf("/bench-leases/ids/%d", i), "", clientv3.WithLease(l.ID)); err != nil {
		return 0, err
	}
	return int64(l.ID), nil
}

type etcdKeepAlive struct {
	st     pb.Lease_LeaseKeepAliveClient
	cancel context.CancelFunc
}

func (e *etcd) keepAlive(ctx context.Context) (keepAliveStream, error) {
	ctx, cancel := context.WithCancel(ctx)
	st, err := pb.NewLeaseClient(e.cli.ActiveConnection()).LeaseKeepAlive(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	return &etcdKeepAlive{st: st, cancel: cancel}, nil
}

func (k *etcdKeepAlive) send(id int64) error { return k.st.Send(&pb.LeaseKeepAliveRequest{ID: id}) }
func (k *etcdKeepAlive) recv() (int64, bool, error) {
	r, err := k.st.Recv()
	if err != nil {
		return 0, false, err
	}
	return r.ID, r.TTL > 0, nil
}
func (k *etcdKeepAlive) close() { k.cancel() }

func (e *etcd) revokeAll(ctx context.Context, ids []int64) {
	forEachLease(ids, func(id int64) { _, _ = e.cli.Revoke(ctx, clientv3.LeaseID(id)) })
}

func (e *etcd) count(ctx context.Context) (int64, error) {
	r, err := e.cli.Get(ctx, "/bench-leases/ids/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return r.Count, nil
}

func (e *etcd) put(ctx context.Context, key string, val []byte) (int64, error) {
	r, err := e.cli.Put(ctx, "/bench-feed/"+key, string(val))
	if err != nil {
		return 0, err
	}
	return r.Header.Revision, nil
}

func (e *etcd) subscribe(ctx context.Context, deliver func(int64)) error {
	wc := e.cli.Watch(ctx, "/bench-feed/", clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	for w := range wc {
		if w.Created {
			deliver(-1)
			continue
		}
		for _, ev := range w.Events {
			deliver(ev.Kv.ModRevision)
		}
	}
	return ctx.Err()
}

func (e *etcd) allocate(ctx context.Context, count int64) error {
	const key = "/bench-seqid"
	for {
		r, err := e.cli.Get(ctx, key)
		if err != nil {
			return err
		}
		var cur int64
		var rev int64
		if len(r.Kvs) > 0 {
			fmt.Sscan(string(r.Kvs[0].Value), &cur)
			rev = r.Kvs[0].ModRevision
		}
		t, err := e.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, fmt.Sprint(cur+count))).Commit()
		if err != nil {
			return err
		}
		if t.Succeeded {
			return nil
		}
	}
}

func (e *etcd) fill(ctx context.Context, n int, progress func(int)) error {
	have, err := e.cli.Get(ctx, "/bench-snap/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return err
	}
	val := string(make([]byte, 100))
	return fillKeys(have.Count, int64(n), progress, func(i int64) error {
		_, err := e.cli.Put(ctx, fmt.Sprintf("/bench-snap/n%08d", i), val)
		return err
	})
}

// image reads the prefix at one revision, in pages (etcd's consistent
// range read), as a client would take etcd's snapshot of a subtree.
func (e *etcd) image(ctx context.Context) (int64, int64, error) {
	var n, b, rev int64
	key := "/bench-snap/"
	end := clientv3.GetPrefixRangeEnd(key)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(1000)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		r, err := e.cli.Get(ctx, key, opts...)
		if err != nil {
			return n, b, err
		}
		if rev == 0 {
			rev = r.Header.Revision
		}
		for _, kv := range r.Kvs {
			n++
			b += int64(len(kv.Key) + len(kv.Value))
		}
		if !r.More || len(r.Kvs) == 0 {
			return n, b, nil
		}
		key = string(r.Kvs[len(r.Kvs)-1].Key) + "\x00"
	}
}
