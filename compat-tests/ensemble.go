package compattests

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Ensembles: what a run against a 3-node ZooKeeper (3.8.0) or any
// ensemble needs besides the scenarios.

// wakeEvery is how often a waker pings its node.
const wakeEvery = 100 * time.Millisecond

// StartWakers works around ZOOKEEPER-4537 (fixed in 3.8.1, the suite's
// ZooKeeper is 3.8.0): an ensemble node's CommitProcessor can miss the
// wake-up for a commit and leave a request, or a session's creation,
// unanswered until another request reaches that node, which in a scenario
// stepping one request at a time means until the client gives up. One
// session per node pinging every wakeEvery (pings pass through the
// CommitProcessor) bounds such a stall. zkbridge gets the same sessions,
// so both sides list the same connections (stat, cons). It returns stop,
// which reports what went wrong with a waker meanwhile.
func StartWakers(addrs []string) (stop func() error, err error) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	stop = func() error {
		close(done)
		wg.Wait()
		return errors.Join(errs...)
	}
	for i, addr := range addrs {
		c, _, err := Connect(addr, "waker", NewTranscript(), DialOptions{})
		if err == nil {
			// One request, so cons shows it like any client's connection.
			_, err = c.Call(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
		}
		if err != nil {
			_ = stop()
			return nil, fmt.Errorf("waker for node %d: %v", i+1, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			wake(c, i, done, fail)
		}()
	}
	return stop, nil
}

// wake pings until done, then closes its session. It does not wait for
// the replies: a stalled ping must not hold back the next one.
func wake(c *Client, node int, done chan struct{}, fail func(error)) {
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_ = c.nc.SetReadDeadline(time.Time{})
		for {
			if _, err := c.fr.Next(); err != nil {
				return
			}
		}
	}()
	defer func() {
		_, _ = c.Send(zkproto.OpCloseSession, nil)
		time.Sleep(wakeEvery) // the close is answered before the reader sees EOF
		c.Close()
		<-drained
	}()
	tick := time.NewTicker(wakeEvery)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-drained:
			fail(fmt.Errorf("waker of node %d: the server closed its connection", node+1))
			return
		case <-tick.C:
			// xid -2, as client libraries ping: it is no operation of the
			// session (cons shows none for it).
			if err := c.SendXid(zkproto.XidPing, zkproto.OpPing, nil); err != nil {
				fail(fmt.Errorf("waker of node %d: %v", node+1, err))
				return
			}
		}
	}
}

// LeaderLast orders a cluster's client addresses followers first, the
// leader last. A scenario's first connection and its four-letter words
// then go to a follower on both sides (srvr, stat and mntr differ by
// role), and the k-th client has the same role on both.
func LeaderLast(addrs []string, d time.Duration) ([]string, error) {
	deadline := time.Now().Add(d)
	var modes []string
	for time.Now().Before(deadline) {
		modes = modes[:0]
		leader := -1
		for i, addr := range addrs {
			m := nodeMode(addr)
			modes = append(modes, m)
			if m == "leader" {
				leader = i
			}
		}
		if leader >= 0 {
			var out []string
			for i, addr := range addrs {
				if i != leader {
					out = append(out, addr)
				}
			}
			return append(out, addrs[leader]), nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, fmt.Errorf("no leader within %v (modes %v)", d, modes)
}
