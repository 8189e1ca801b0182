package bench

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Error names of the connect workload's failures (no server reply to name).
const (
	errNoSession = "NoSession" // TCP connect or handshake failed
	errNoClose   = "NoCloseReply"
)

// connectRetryPause spaces a connector's attempts after a failed one, so a
// server that refuses connections outright is not spun on.
const connectRetryPause = 10 * time.Millisecond

// connect runs the session workload: Connections connectors each open a
// session (TCP connect and handshake), optionally send one exists on Root,
// close it (closeSession, waiting for the reply), and start over. A
// session is the unit: sessions/s counts handshakes that succeeded.
func (r *runner) connect() ([]*connStats, error) {
	stats := make([]*connStats, r.cfg.Connections)
	var wg sync.WaitGroup
	for i := range stats {
		st := &connStats{}
		stats[i] = st
		wg.Add(1)
		go func() { defer wg.Done(); r.connector(i, st) }()
	}
	wg.Wait()
	var sessions, failed int64
	for _, st := range stats {
		sessions += st.ops[OpConnect].ok
		for _, n := range st.ops[OpConnect].errs {
			failed += n
		}
	}
	if sessions == 0 && failed > 0 {
		return nil, fmt.Errorf("no session could be established (%d attempts failed)", failed)
	}
	return stats, nil
}

// connector is one connect-workload loop; the servers take turns. The
// churn workload is the same loop with an ephemeral create in each
// session, and the whole cycle (connect, create, close) as its unit.
func (r *runner) connector(id int, st *connStats) {
	exists := zkproto.ExistsRequest{Path: r.cfg.Root}
	churn := r.cfg.Workload == "churn"
	prefix := r.path("/c/") + r.nonce + "-e" + strconv.Itoa(id) + "-"
	create := zkproto.CreateRequest{ACL: zkproto.OpenACLUnsafe(), Flags: int32(zkproto.ModeEphemeral), Data: r.payload}
	for n := id; ; n++ {
		ok, measured := r.more()
		if !ok {
			return
		}
		count := func(op Op, start time.Time, errName string) {
			r.completed.Add(1)
			if errName != "" {
				r.failed.Add(1)
			}
			if !measured {
				return
			}
			s := &st.ops[op]
			now := time.Now()
			if errName != "" {
				s.fail(errName)
				return
			}
			s.ok++
			s.hist.Record(now.Sub(start))
			st.last = now
		}
		start := time.Now()
		c, err := dial(r.cfg.TLS, r.cfg.Addrs[n%len(r.cfg.Addrs)], 1, r.cfg.SessionTimeout, r.cfg.Timeout, nil)
		if err != nil {
			count(OpConnect, start, errNoSession)
			pause(r, connectRetryPause)
			continue
		}
		count(OpConnect, start, "")
		cycle := start
		if r.cfg.ConnectExists {
			r.existsOnce(c, &exists, measured, st)
		}
		if churn {
			create.Path = prefix + strconv.Itoa(n)
			if code := r.createOnce(c, &create, measured, st); code != zkproto.ErrOK {
				c.close()
				count(OpChurn, cycle, code.Name())
				continue
			}
		}
		start = time.Now()
		if err := c.closeWithin(r.cfg.Timeout); err != nil {
			count(OpClose, start, errNoClose)
			if churn {
				count(OpChurn, cycle, errNoClose)
			}
			continue
		}
		count(OpClose, start, "")
		if churn {
			count(OpChurn, cycle, "")
		}
	}
}

// existsOnce sends one exists on c and records it in st.
func (r *runner) existsOnce(c *conn, req *zkproto.ExistsRequest, measured bool, st *connStats) {
	cl := &call{op: OpExists, measured: measured, done: func(cl *call, rp *reply) {
		r.completed.Add(1)
		if rp.hdr.Err != zkproto.ErrOK {
			r.failed.Add(1)
		}
		if !cl.measured {
			return
		}
		s := &st.ops[OpExists]
		if rp.err == nil {
			s.hist.Record(rp.at.Sub(cl.start))
		}
		if rp.hdr.Err == zkproto.ErrOK {
			s.ok++
		} else {
			s.fail(rp.hdr.Err.Name())
		}
	}}
	if c.send(zkproto.OpExists, req, cl) == nil {
		c.wait(r.cfg.Timeout)
	}
}

// createOnce sends one create on c, records it in st and returns its
// outcome.
func (r *runner) createOnce(c *conn, req *zkproto.CreateRequest, measured bool, st *connStats) zkproto.ErrCode {
	code := zkproto.ErrConnectionLoss
	cl := &call{op: OpCreate, measured: measured, done: func(cl *call, rp *reply) {
		code = rp.hdr.Err
		r.completed.Add(1)
		if code != zkproto.ErrOK {
			r.failed.Add(1)
		}
		if !cl.measured {
			return
		}
		s := &st.ops[OpCreate]
		if rp.err == nil {
			s.hist.Record(rp.at.Sub(cl.start))
		}
		if code == zkproto.ErrOK {
			s.ok++
		} else {
			s.fail(code.Name())
		}
	}}
	if c.send(zkproto.OpCreate, req, cl) == nil {
		c.wait(r.cfg.Timeout)
	}
	return code
}

// pause sleeps for d or until the run is cancelled.
func pause(r *runner, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.ctx.Done():
	}
}
