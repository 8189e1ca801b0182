package zkproto

// PasswordLength is the length of a session password.
const PasswordLength = 16

// ConnectRequest is the first message of a connection: a bare record with
// no RequestHeader. Clients of ZooKeeper ≥3.4 append a readOnly byte
// (45 bytes); older ones and go-zookeeper do not (44 bytes). HasReadOnly
// records which form was read and selects the form written.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	TimeOut         int32 // requested session timeout, ms
	SessionID       int64 // 0 for a new session
	Passwd          []byte
	ReadOnly        bool // the client accepts a read-only server
	HasReadOnly     bool // the readOnly byte is present on the wire
}

// Encode writes the request, with the readOnly byte if HasReadOnly.
func (r *ConnectRequest) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Long(r.LastZxidSeen)
	e.Int(r.TimeOut)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

// Decode reads either form: the readOnly byte is read when one remains.
func (r *ConnectRequest) Decode(d *Decoder) error {
	r.ProtocolVersion = d.Int()
	r.LastZxidSeen = d.Long()
	r.TimeOut = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	r.HasReadOnly = d.Err() == nil && d.Remaining() > 0
	if r.HasReadOnly {
		r.ReadOnly = d.Bool()
	}
	return d.Err()
}

// ConnectResponse is the first message from the server: a bare record with
// no ReplyHeader. A server answers a 44-byte request with the 36-byte form
// (no readOnly byte). TimeOut 0 with SessionID 0 means the session is
// expired or the password was wrong.
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32 // negotiated session timeout, ms
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool // the server is read-only
	HasReadOnly     bool // the readOnly byte is present on the wire
}

// Encode writes the response, with the readOnly byte if HasReadOnly.
func (r *ConnectResponse) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Int(r.TimeOut)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

// Decode reads either form.
func (r *ConnectResponse) Decode(d *Decoder) error {
	r.ProtocolVersion = d.Int()
	r.TimeOut = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	r.HasReadOnly = d.Err() == nil && d.Remaining() > 0
	if r.HasReadOnly {
		r.ReadOnly = d.Bool()
	}
	return d.Err()
}
