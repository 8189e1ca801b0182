package bench

import (
	"fmt"
	"sync"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// watch runs the fan-out workload: Watchers sessions each set a watch on
// one node (WatchKind data: getData, fired by a setData of the node;
// children: getChildren, fired by a create or delete of a child, in turn),
// one more session writes, and a round's latency is the time from the
// write's send to the last watcher's event: how long until every watcher
// knows. The part after the write's reply is reported too (after_reply,
// 0 when every event beat the reply), but it does not compare servers: one
// that queues the events before the writer's reply (ZooKeeper) shows a
// short tail behind a long write. Rounds run one after another; re-arming
// the watches is part of a round but not of its latency.
func (r *runner) watch() ([]*connStats, error) {
	node := r.path("/w")
	children := r.cfg.WatchKind == "children"
	want := zkproto.EventNodeDataChanged
	if children {
		want = zkproto.EventNodeChildrenChanged
	}
	events := make(chan time.Time, 2*r.cfg.Watchers)
	onEvent := func(int) func(zkproto.WatcherEvent, time.Time) {
		return func(ev zkproto.WatcherEvent, at time.Time) {
			if ev.Type == want && ev.Path == node {
				select {
				case events <- at:
				default: // stale events from a timed-out round; dropped
				}
			}
		}
	}
	watchers, err := r.dialAll(r.cfg.Watchers, 2, onEvent)
	if err != nil {
		return nil, err
	}
	defer closeAll(watchers)
	writer, err := dial(r.cfg.TLS, r.cfg.Addrs[0], 2, r.cfg.SessionTimeout, r.cfg.Timeout, nil)
	if err != nil {
		return nil, fmt.Errorf("writer: %w", err)
	}
	defer writer.close()

	var st connStats
	var (
		arm          zkproto.Record = &zkproto.GetDataRequest{Path: node, Watch: true}
		armOp                       = zkproto.OpGetData
		set                         = zkproto.SetDataRequest{Path: node, Data: r.payload, Version: -1}
		child                       = node + "/" + r.nonce
		create                      = zkproto.CreateRequest{Path: child, ACL: zkproto.OpenACLUnsafe()}
		del                         = zkproto.DeleteRequest{Path: child, Version: -1}
		childIsThere                = false
	)
	if children {
		arm, armOp = &zkproto.GetChildrenRequest{Path: node, Watch: true}, zkproto.OpGetChildren
		defer func() { // the last round's child, if it is there
			if childIsThere {
				_ = writer.send(zkproto.OpDelete, &del, &call{done: func(*call, *reply) {}})
				writer.wait(r.cfg.Timeout)
			}
		}()
	}
	for {
		ok, measured := r.more()
		if !ok {
			break
		}
		for len(events) > 0 {
			<-events
		}
		// Arm: every watcher's getData must be answered before the write.
		var mu sync.Mutex
		var armErr zkproto.ErrCode
		for _, w := range watchers {
			err := w.send(armOp, arm, &call{done: func(_ *call, rp *reply) {
				if rp.hdr.Err != zkproto.ErrOK {
					mu.Lock()
					armErr = rp.hdr.Err
					mu.Unlock()
				}
			}})
			if err != nil {
				return nil, fmt.Errorf("watcher: %w", err)
			}
			_ = w.flush()
		}
		for _, w := range watchers {
			w.wait(r.cfg.Timeout)
		}
		if armErr != zkproto.ErrOK {
			return nil, fmt.Errorf("watcher %s %s: %s", armOp, node, armErr.Name())
		}
		// Write, and note when its reply arrived.
		var t0 time.Time
		var setStart time.Time
		var setErr zkproto.ErrCode
		var setLost bool
		writeOp, write := zkproto.OpSetData, zkproto.Record(&set)
		if children && childIsThere {
			writeOp, write = zkproto.OpDelete, &del
		} else if children {
			writeOp, write = zkproto.OpCreate, &create
		}
		if err := writer.send(writeOp, write, &call{done: func(cl *call, rp *reply) {
			t0, setStart, setErr, setLost = rp.at, cl.start, rp.hdr.Err, rp.err != nil
		}}); err != nil {
			return nil, fmt.Errorf("writer: %w", err)
		}
		writer.wait(r.cfg.Timeout)
		if setLost {
			return nil, fmt.Errorf("writer: %v", writer.err)
		}
		if setErr != zkproto.ErrOK {
			return nil, fmt.Errorf("writer %s %s: %s", writeOp, node, setErr.Name())
		}
		if children {
			childIsThere = !childIsThere
		}
		last, got := t0, 0 // an event before the reply counts as at the reply
		timer := time.NewTimer(r.cfg.Timeout)
	collect:
		for got < r.cfg.Watchers {
			select {
			case at := <-events:
				got++
				if at.After(last) {
					last = at
				}
			case <-timer.C:
				break collect
			}
		}
		timer.Stop()
		r.completed.Add(1)
		if got < r.cfg.Watchers {
			r.failed.Add(1)
		}
		if !measured {
			continue
		}
		r.events.Add(int64(got))
		st.ops[OpSet].ok++
		st.ops[OpSet].hist.Record(t0.Sub(setStart))
		if got < r.cfg.Watchers {
			for range r.cfg.Watchers - got {
				st.ops[OpWatch].fail(errEventTimeout)
			}
		} else {
			st.ops[OpWatch].ok++
			st.ops[OpWatch].hist.Record(last.Sub(setStart))
			st.ops[OpAfterReply].ok++
			st.ops[OpAfterReply].hist.Record(last.Sub(t0))
		}
		st.last = time.Now()
	}
	return []*connStats{&st}, nil
}
