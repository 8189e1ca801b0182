package compattests

import (
	"fmt"
	"strings"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Wide nodes: a getChildren reply larger than jute.maxbuffer. ZooKeeper 3.8
// bounds the requests it reads, not the replies it writes: it sends the
// whole list, and a client with the default jute.maxbuffer refuses the
// frame ("Packet len … is out of range", ConnectionLoss in the Java client).
// zkbridge must send the same reply, not an error of its own.

// wideChildren children with wideNameLen-byte names make a getChildren
// reply of 1,054,220 bytes, over the 1,048,575-byte default (long names
// keep the children few, and the scenario quick).
const (
	wideChildren = 1050
	wideNameLen  = 1000
)

func init() {
	register(&Scenario{Area: "limits", Name: "getChildren reply over jute.maxbuffer", Run: func(s *S) {
		c := s.Client("c1")
		parent := s.P("wide")
		s.Create(c, parent, nil, 0)
		// The children, pipelined and recorded as one line: their replies
		// would be thousands of identical ones.
		pad := strings.Repeat("n", wideNameLen-5)
		made := 0
		for first := 0; first < wideChildren; first += 500 {
			var xids []int32
			for i := first; i < min(first+500, wideChildren); i++ {
				xid, err := c.Send(zkproto.OpCreate, &zkproto.CreateRequest{Path: fmt.Sprintf("%s/%s%05d", parent, pad, i), ACL: zkproto.OpenACLUnsafe()})
				if err != nil {
					s.Failf("create child %d: %v", i, err)
					return
				}
				xids = append(xids, xid)
			}
			for _, xid := range xids {
				r, err := c.Receive(xid, zkproto.OpCreate)
				if err != nil {
					s.Failf("create reply: %v", err)
					return
				}
				if r.Header.Err == zkproto.ErrOK {
					made++
				}
			}
		}
		s.T.Logf("c1: created %d children of %d-byte names under %s", made, wideNameLen, parent)
		s.Do(c, zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: parent})
		// The list itself, summarised: error, count, the reply's size and
		// whether it is over the limit.
		for _, op := range []zkproto.OpCode{zkproto.OpGetChildren, zkproto.OpGetChildren2} {
			var req zkproto.Record = &zkproto.GetChildrenRequest{Path: parent}
			if op == zkproto.OpGetChildren2 {
				req = &zkproto.GetChildren2Request{Path: parent}
			}
			r, err := c.Call(op, req)
			if err != nil {
				s.T.Logf("c1 < %v %s: %s", op, parent, normErr(err))
				continue
			}
			var children []string
			switch b := r.Body.(type) {
			case *zkproto.GetChildrenResponse:
				children = b.Children
			case *zkproto.GetChildren2Response:
				children = b.Children
			}
			size := 16 + 4 // reply header, list length
			for _, ch := range children {
				size += 4 + len(ch)
			}
			s.T.Logf("c1 < %v %s: %s, %d children, a reply of about %d bytes (over jute.maxbuffer %d: %v)",
				op, parent, r.Header.Err.Name(), len(children), size, zkproto.DefaultMaxBuffer, size > zkproto.DefaultMaxBuffer)
		}
		// The session is still good afterwards.
		s.Exists(c, parent, false)
	}})
}
