package compattests

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Client is a raw ZooKeeper protocol client over zkproto: it sends exactly
// the frames a scenario asks for and records every reply and watch event in
// arrival order. Unlike a full client library it never pings, reconnects or
// re-sends on its own, so transcripts are exact.
type Client struct {
	Name      string
	SessionID int64
	Passwd    []byte
	Timeout   int32
	LastZxid  int64

	nc  net.Conn
	fr  *zkproto.FrameReader
	xid int32
	rec *Transcript
}

// ErrClosed means the server closed the connection.
var ErrClosed = errors.New("connection closed by server")

// ioTimeout bounds every wait for a frame: a server that never answers
// fails the scenario instead of hanging it.
const ioTimeout = 10 * time.Second

// DialOptions shape the ConnectRequest.
type DialOptions struct {
	Timeout      int32 // requested session timeout, ms (default 30000)
	SessionID    int64
	Passwd       []byte
	LastZxidSeen int64
	NoReadOnly   bool // send the 44-byte form without the readOnly byte
	CanReadOnly  bool // ask for canBeReadOnly (a read-only server may admit the client)
}

// dialRaw opens a TCP connection without a handshake.
func dialRaw(addr string) (net.Conn, error) {
	return net.DialTimeout("tcp", addr, ioTimeout)
}

// Connect dials addr and performs the handshake. It returns the
// ConnectResponse too, so scenarios can record it.
func Connect(addr, name string, rec *Transcript, o DialOptions) (*Client, *zkproto.ConnectResponse, error) {
	nc, err := dialRaw(addr)
	if err != nil {
		return nil, nil, err
	}
	return ConnectOver(nc, name, rec, o)
}

// ConnectOver performs the handshake on a connection already open (a TLS
// one, say); it closes nc when the handshake fails.
func ConnectOver(nc net.Conn, name string, rec *Transcript, o DialOptions) (*Client, *zkproto.ConnectResponse, error) {
	c := &Client{Name: name, nc: nc, fr: zkproto.NewFrameReader(nc, 4<<20), rec: rec}
	if o.Timeout == 0 {
		o.Timeout = 30000
	}
	passwd := o.Passwd
	if passwd == nil {
		passwd = make([]byte, zkproto.PasswordLength)
	}
	req := zkproto.ConnectRequest{LastZxidSeen: o.LastZxidSeen, TimeOut: o.Timeout, SessionID: o.SessionID,
		Passwd: passwd, HasReadOnly: !o.NoReadOnly, ReadOnly: o.CanReadOnly}
	if err := c.writeRecord(&req); err != nil {
		nc.Close()
		return nil, nil, err
	}
	frame, err := c.readFrame()
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	var resp zkproto.ConnectResponse
	if err := zkproto.Unmarshal(frame, &resp); err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("connect response: %w", err)
	}
	c.SessionID, c.Passwd, c.Timeout = resp.SessionID, resp.Passwd, resp.TimeOut
	return c, &resp, nil
}

func (c *Client) writeRecord(r zkproto.Record) error {
	var e zkproto.Encoder
	off := e.StartFrame()
	r.Encode(&e)
	e.FinishFrame(off)
	return c.writeRaw(e.Bytes())
}

func (c *Client) writeRaw(b []byte) error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
	_, err := c.nc.Write(b)
	return err
}

func (c *Client) readFrame() ([]byte, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	f, err := c.fr.Next()
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, fmt.Errorf("no answer within %v", ioTimeout)
		}
		return nil, ErrClosed
	}
	return append([]byte(nil), f...), nil
}

// Reply is one decoded reply.
type Reply struct {
	Header zkproto.ReplyHeader
	Body   zkproto.Record // nil when err != 0 or the op has no body
	Op     zkproto.OpCode // the request's
}

// Send writes a request without waiting and returns its xid.
func (c *Client) Send(op zkproto.OpCode, req zkproto.Record) (int32, error) {
	c.xid++
	return c.xid, c.SendXid(c.xid, op, req)
}

// SendXid writes a request with an explicit xid.
func (c *Client) SendXid(xid int32, op zkproto.OpCode, req zkproto.Record) error {
	var e zkproto.Encoder
	off := e.StartFrame()
	h := zkproto.RequestHeader{Xid: xid, Type: op}
	h.Encode(&e)
	if req != nil {
		req.Encode(&e)
	}
	e.FinishFrame(off)
	return c.writeRaw(e.Bytes())
}

// Receive reads frames until the reply to xid, recording every watch
// event that arrives before it. op selects the body decoder.
func (c *Client) Receive(xid int32, op zkproto.OpCode) (*Reply, error) {
	for {
		frame, err := c.readFrame()
		if err != nil {
			return nil, err
		}
		d := zkproto.NewDecoder(frame)
		var h zkproto.ReplyHeader
		if err := h.Decode(d); err != nil {
			return nil, fmt.Errorf("reply header: %w", err)
		}
		if h.Xid == zkproto.XidNotification {
			var ev zkproto.WatcherEvent
			if err := ev.Decode(d); err != nil {
				return nil, fmt.Errorf("watch event: %w", err)
			}
			c.rec.event(c.Name, h, ev)
			continue
		}
		if h.Xid != xid {
			return nil, fmt.Errorf("reply xid %d, waiting for %d (out of order)", h.Xid, xid)
		}
		if h.Zxid > 0 {
			c.LastZxid = h.Zxid
		}
		r := &Reply{Header: h, Op: op}
		if h.Err == zkproto.ErrOK && d.Remaining() > 0 {
			body, ok := zkproto.NewResponse(op)
			if !ok {
				return nil, fmt.Errorf("no response record for %v", op)
			}
			if err := body.Decode(d); err != nil {
				return nil, fmt.Errorf("%v response: %w", op, err)
			}
			r.Body = body
		}
		return r, nil
	}
}

// Call sends a request and waits for its reply.
func (c *Client) Call(op zkproto.OpCode, req zkproto.Record) (*Reply, error) {
	xid, err := c.Send(op, req)
	if err != nil {
		return nil, err
	}
	if op == zkproto.OpPing {
		xid = zkproto.XidPing
	}
	return c.Receive(xid, op)
}

// WaitEvents reads frames until n watch events arrived or d passed, and
// records them; it returns how many arrived.
func (c *Client) WaitEvents(n int, d time.Duration) int {
	got := 0
	deadline := time.Now().Add(d)
	for got < n && time.Now().Before(deadline) {
		_ = c.nc.SetReadDeadline(deadline)
		frame, err := c.fr.Next()
		if err != nil {
			return got
		}
		dec := zkproto.NewDecoder(frame)
		var h zkproto.ReplyHeader
		if h.Decode(dec) != nil || h.Xid != zkproto.XidNotification {
			continue
		}
		var ev zkproto.WatcherEvent
		if ev.Decode(dec) == nil {
			c.rec.event(c.Name, h, ev)
			got++
		}
	}
	return got
}

// Closed reports whether the server has closed the connection (it reads
// one frame with a short deadline; any data read is dropped).
func (c *Client) Closed(wait time.Duration) bool {
	_ = c.nc.SetReadDeadline(time.Now().Add(wait))
	_, err := c.fr.Next()
	if err == nil {
		return false
	}
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// EndSession sends closeSession and reports whether its reply arrived
// within wait (watch events before it are dropped, not recorded).
func (c *Client) EndSession(wait time.Duration) bool {
	xid, err := c.Send(zkproto.OpCloseSession, nil)
	if err != nil {
		return false
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(wait))
	for {
		frame, err := c.fr.Next()
		if err != nil {
			return false
		}
		var h zkproto.ReplyHeader
		if h.Decode(zkproto.NewDecoder(frame)) == nil && h.Xid == xid {
			return true
		}
	}
}

// Close closes the TCP connection without a closeSession.
func (c *Client) Close() { c.nc.Close() }
