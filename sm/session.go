package sm

import (
	"bytes"
	"fmt"

	"github.com/zkbridge/zkbridge/zkproto"
)

const sessionRecVersion byte = 1

// SessionInfo is the replicated record of a session.
//
// Conn is the connection currently allowed to write for the session and
// LastSeq the sequence number of its last applied write: the next accepted
// write carries (Conn, LastSeq+1).
type SessionInfo struct {
	ID       int64
	Timeout  int32
	Password []byte
	Owner    uint64
	Conn     uint64
	LastSeq  uint64
	Auth     []zkproto.Id
}

func (s *SessionInfo) encode() []byte {
	e := &enc{}
	e.u8(sessionRecVersion)
	e.svar(int64(s.Timeout))
	e.bytesOrNil(s.Password)
	e.uvar(s.Owner)
	e.uvar(s.Conn)
	e.uvar(s.LastSeq)
	encodeIDs(e, s.Auth)
	return e.b
}

func decodeSession(id int64, b []byte) (*SessionInfo, error) {
	if len(b) == 0 || b[0] != sessionRecVersion {
		return nil, fmt.Errorf("session %#x: unknown record version", id)
	}
	d := &dec{b: b[1:]}
	s := &SessionInfo{ID: id}
	s.Timeout = d.i32()
	s.Password = d.bytesOrNil()
	s.Owner = d.uvar()
	s.Conn = d.uvar()
	s.LastSeq = d.uvar()
	s.Auth = decodeIDs(d)
	if err := d.done(); err != nil {
		return nil, fmt.Errorf("session %#x: %w", id, err)
	}
	return s, nil
}

func (t *txn) session(id int64) (*SessionInfo, error) {
	v, err := t.get(sessionKey(id))
	if err != nil || v == nil {
		return nil, err
	}
	return decodeSession(id, v)
}

func (t *txn) putSession(s *SessionInfo) { t.set(sessionKey(s.ID), s.encode()) }

func passwordEqual(a, b []byte) bool { return bytes.Equal(a, b) }
