// Code in this file mirrors zookeeper.jute record by record, in its field order.

package zkproto

// RequestHeader precedes every request body after the handshake.
type RequestHeader struct {
	Xid  int32
	Type OpCode
}

// Encode writes the record.
func (r *RequestHeader) Encode(e *Encoder) {
	e.Int(r.Xid)
	e.Int(int32(r.Type))
}

// Decode reads the record.
func (r *RequestHeader) Decode(d *Decoder) error {
	r.Xid = d.Int()
	r.Type = OpCode(d.Int())
	return d.Err()
}

// ReplyHeader precedes every reply body and watch event.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  ErrCode
}

// Encode writes the record.
func (r *ReplyHeader) Encode(e *Encoder) {
	e.Int(r.Xid)
	e.Long(r.Zxid)
	e.Int(int32(r.Err))
}

// Decode reads the record.
func (r *ReplyHeader) Decode(d *Decoder) error {
	r.Xid = d.Int()
	r.Zxid = d.Long()
	r.Err = ErrCode(d.Int())
	return d.Err()
}

// WatcherEvent is the body of a notification (xid -1).
type WatcherEvent struct {
	Type  EventType
	State KeeperState
	Path  string
}

// Encode writes the record.
func (r *WatcherEvent) Encode(e *Encoder) {
	e.Int(int32(r.Type))
	e.Int(int32(r.State))
	e.String(r.Path)
}

// Decode reads the record.
func (r *WatcherEvent) Decode(d *Decoder) error {
	r.Type = EventType(d.Int())
	r.State = KeeperState(d.Int())
	r.Path = d.String()
	return d.Err()
}

// MultiHeader precedes each op of a multi request and each result of a multi response.
type MultiHeader struct {
	Type OpCode
	Done bool
	Err  ErrCode
}

// Encode writes the record.
func (r *MultiHeader) Encode(e *Encoder) {
	e.Int(int32(r.Type))
	e.Bool(r.Done)
	e.Int(int32(r.Err))
}

// Decode reads the record.
func (r *MultiHeader) Decode(d *Decoder) error {
	r.Type = OpCode(d.Int())
	r.Done = d.Bool()
	r.Err = ErrCode(d.Int())
	return d.Err()
}

// AuthPacket adds an identity to the connection (op 100). Type is always 0.
type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

// Encode writes the record.
func (r *AuthPacket) Encode(e *Encoder) {
	e.Int(r.Type)
	e.String(r.Scheme)
	e.Buffer(r.Auth)
}

// Decode reads the record.
func (r *AuthPacket) Decode(d *Decoder) error {
	r.Type = d.Int()
	r.Scheme = d.String()
	r.Auth = d.Buffer()
	return d.Err()
}

// SetWatches re-registers a reconnecting client's watches (op 101).
type SetWatches struct {
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
}

// Encode writes the record.
func (r *SetWatches) Encode(e *Encoder) {
	e.Long(r.RelativeZxid)
	e.Strings(r.DataWatches)
	e.Strings(r.ExistWatches)
	e.Strings(r.ChildWatches)
}

// Decode reads the record.
func (r *SetWatches) Decode(d *Decoder) error {
	r.RelativeZxid = d.Long()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
	return d.Err()
}

// SetWatches2 re-registers watches including persistent ones (op 105).
type SetWatches2 struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

// Encode writes the record.
func (r *SetWatches2) Encode(e *Encoder) {
	e.Long(r.RelativeZxid)
	e.Strings(r.DataWatches)
	e.Strings(r.ExistWatches)
	e.Strings(r.ChildWatches)
	e.Strings(r.PersistentWatches)
	e.Strings(r.PersistentRecursiveWatches)
}

// Decode reads the record.
func (r *SetWatches2) Decode(d *Decoder) error {
	r.RelativeZxid = d.Long()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
	r.PersistentWatches = d.Strings()
	r.PersistentRecursiveWatches = d.Strings()
	return d.Err()
}

// GetDataRequest is the body of getData (op 4).
type GetDataRequest struct {
	Path  string
	Watch bool
}

// Encode writes the record.
func (r *GetDataRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Bool(r.Watch)
}

// Decode reads the record.
func (r *GetDataRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Watch = d.Bool()
	return d.Err()
}

// SetDataRequest is the body of setData (op 5).
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

// Encode writes the record.
func (r *SetDataRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	e.Int(r.Version)
}

// Decode reads the record.
func (r *SetDataRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.Version = d.Int()
	return d.Err()
}

// ReconfigRequest is the body of reconfig (op 16). ZooKeeper tells an
// absent argument (a null string, as Java clients send it) from an empty
// one: newMembers "" asks for a configuration of no members. A non-empty
// argument is present; an empty one is present only with its Empty flag
// (sent as ""), else it is null.
type ReconfigRequest struct {
	JoiningServers string
	LeavingServers string
	NewMembers     string
	CurConfigID    int64

	EmptyJoining, EmptyLeaving, EmptyNewMembers bool
}

// Joining returns joiningServers and whether it was present (not null).
func (r *ReconfigRequest) Joining() (string, bool) {
	return r.JoiningServers, r.JoiningServers != "" || r.EmptyJoining
}

// Leaving returns leavingServers and whether it was present (not null).
func (r *ReconfigRequest) Leaving() (string, bool) {
	return r.LeavingServers, r.LeavingServers != "" || r.EmptyLeaving
}

// Members returns newMembers and whether it was present (not null).
func (r *ReconfigRequest) Members() (string, bool) {
	return r.NewMembers, r.NewMembers != "" || r.EmptyNewMembers
}

// Encode writes the record.
func (r *ReconfigRequest) Encode(e *Encoder) {
	for _, f := range []struct {
		s   string
		has bool
	}{{r.JoiningServers, r.EmptyJoining}, {r.LeavingServers, r.EmptyLeaving}, {r.NewMembers, r.EmptyNewMembers}} {
		if f.s == "" && !f.has {
			e.Int(-1)
			continue
		}
		e.String(f.s)
	}
	e.Long(r.CurConfigID)
}

// Decode reads the record.
func (r *ReconfigRequest) Decode(d *Decoder) error {
	var ok [3]bool
	r.JoiningServers, ok[0] = d.NullableString()
	r.LeavingServers, ok[1] = d.NullableString()
	r.NewMembers, ok[2] = d.NullableString()
	r.EmptyJoining = ok[0] && r.JoiningServers == ""
	r.EmptyLeaving = ok[1] && r.LeavingServers == ""
	r.EmptyNewMembers = ok[2] && r.NewMembers == ""
	r.CurConfigID = d.Long()
	return d.Err()
}

// SetDataResponse answers setData.
type SetDataResponse struct {
	Stat Stat
}

// Encode writes the record.
func (r *SetDataResponse) Encode(e *Encoder) {
	r.Stat.Encode(e)
}

// Decode reads the record.
func (r *SetDataResponse) Decode(d *Decoder) error {
	r.Stat.Decode(d)
	return d.Err()
}

// GetSASLRequest is the body of sasl (op 102).
type GetSASLRequest struct {
	Token []byte
}

// Encode writes the record.
func (r *GetSASLRequest) Encode(e *Encoder) {
	e.Buffer(r.Token)
}

// Decode reads the record.
func (r *GetSASLRequest) Decode(d *Decoder) error {
	r.Token = d.Buffer()
	return d.Err()
}

// SetSASLRequest is defined by zookeeper.jute; no opcode sends it.
type SetSASLRequest struct {
	Token []byte
}

// Encode writes the record.
func (r *SetSASLRequest) Encode(e *Encoder) {
	e.Buffer(r.Token)
}

// Decode reads the record.
func (r *SetSASLRequest) Decode(d *Decoder) error {
	r.Token = d.Buffer()
	return d.Err()
}

// SetSASLResponse answers sasl.
type SetSASLResponse struct {
	Token []byte
}

// Encode writes the record.
func (r *SetSASLResponse) Encode(e *Encoder) {
	e.Buffer(r.Token)
}

// Decode reads the record.
func (r *SetSASLResponse) Decode(d *Decoder) error {
	r.Token = d.Buffer()
	return d.Err()
}

// CreateRequest is the body of create, create2 and createContainer (ops 1, 15, 19).
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
}

// Encode writes the record.
func (r *CreateRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	encodeACLs(e, r.ACL)
	e.Int(r.Flags)
}

// Decode reads the record.
func (r *CreateRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = decodeACLs(d)
	r.Flags = d.Int()
	return d.Err()
}

// CreateTTLRequest is the body of createTTL (op 21).
type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
	TTL   int64
}

// Encode writes the record.
func (r *CreateTTLRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	encodeACLs(e, r.ACL)
	e.Int(r.Flags)
	e.Long(r.TTL)
}

// Decode reads the record.
func (r *CreateTTLRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = decodeACLs(d)
	r.Flags = d.Int()
	r.TTL = d.Long()
	return d.Err()
}

// DeleteRequest is the body of delete (op 2).
type DeleteRequest struct {
	Path    string
	Version int32
}

// Encode writes the record.
func (r *DeleteRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Int(r.Version)
}

// Decode reads the record.
func (r *DeleteRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Version = d.Int()
	return d.Err()
}

// GetChildrenRequest is the body of getChildren (op 8).
type GetChildrenRequest struct {
	Path  string
	Watch bool
}

// Encode writes the record.
func (r *GetChildrenRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Bool(r.Watch)
}

// Decode reads the record.
func (r *GetChildrenRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Watch = d.Bool()
	return d.Err()
}

// GetAllChildrenNumberRequest is the body of getAllChildrenNumber (op 104).
type GetAllChildrenNumberRequest struct {
	Path string
}

// Encode writes the record.
func (r *GetAllChildrenNumberRequest) Encode(e *Encoder) {
	e.String(r.Path)
}

// Decode reads the record.
func (r *GetAllChildrenNumberRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	return d.Err()
}

// GetChildren2Request is the body of getChildren2 (op 12).
type GetChildren2Request struct {
	Path  string
	Watch bool
}

// Encode writes the record.
func (r *GetChildren2Request) Encode(e *Encoder) {
	e.String(r.Path)
	e.Bool(r.Watch)
}

// Decode reads the record.
func (r *GetChildren2Request) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Watch = d.Bool()
	return d.Err()
}

// CheckVersionRequest is the body of check (op 13), valid only inside a multi.
type CheckVersionRequest struct {
	Path    string
	Version int32
}

// Encode writes the record.
func (r *CheckVersionRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Int(r.Version)
}

// Decode reads the record.
func (r *CheckVersionRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Version = d.Int()
	return d.Err()
}

// GetMaxChildrenRequest is defined by zookeeper.jute; no opcode sends it.
type GetMaxChildrenRequest struct {
	Path string
}

// Encode writes the record.
func (r *GetMaxChildrenRequest) Encode(e *Encoder) {
	e.String(r.Path)
}

// Decode reads the record.
func (r *GetMaxChildrenRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	return d.Err()
}

// GetMaxChildrenResponse is defined by zookeeper.jute; no opcode sends it.
type GetMaxChildrenResponse struct {
	Max int32
}

// Encode writes the record.
func (r *GetMaxChildrenResponse) Encode(e *Encoder) {
	e.Int(r.Max)
}

// Decode reads the record.
func (r *GetMaxChildrenResponse) Decode(d *Decoder) error {
	r.Max = d.Int()
	return d.Err()
}

// SetMaxChildrenRequest is defined by zookeeper.jute; no opcode sends it.
type SetMaxChildrenRequest struct {
	Path string
	Max  int32
}

// Encode writes the record.
func (r *SetMaxChildrenRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Int(r.Max)
}

// Decode reads the record.
func (r *SetMaxChildrenRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Max = d.Int()
	return d.Err()
}

// SyncRequest is the body of sync (op 9).
type SyncRequest struct {
	Path string
}

// Encode writes the record.
func (r *SyncRequest) Encode(e *Encoder) {
	e.String(r.Path)
}

// Decode reads the record.
func (r *SyncRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	return d.Err()
}

// SyncResponse answers sync, echoing the path.
type SyncResponse struct {
	Path string
}

// Encode writes the record.
func (r *SyncResponse) Encode(e *Encoder) {
	e.String(r.Path)
}

// Decode reads the record.
func (r *SyncResponse) Decode(d *Decoder) error {
	r.Path = d.String()
	return d.Err()
}

// GetACLRequest is the body of getACL (op 6).
type GetACLRequest struct {
	Path string
}

// Encode writes the record.
func (r *GetACLRequest) Encode(e *Encoder) {
	e.String(r.Path)
}

// Decode reads the record.
func (r *GetACLRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	return d.Err()
}

// SetACLRequest is the body of setACL (op 7); Version is compared with aversion.
type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

// Encode writes the record.
func (r *SetACLRequest) Encode(e *Encoder) {
	e.String(r.Path)
	encodeACLs(e, r.ACL)
	e.Int(r.Version)
}

// Decode reads the record.
func (r *SetACLRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.ACL = decodeACLs(d)
	r.Version = d.Int()
	return d.Err()
}

// SetACLResponse answers setACL.
type SetACLResponse struct {
	Stat Stat
}

// Encode writes the record.
func (r *SetACLResponse) Encode(e *Encoder) {
	r.Stat.Encode(e)
}

// Decode reads the record.
func (r *SetACLResponse) Decode(d *Decoder) error {
	r.Stat.Decode(d)
	return d.Err()
}

// AddWatchRequest is the body of addWatch (op 106).
type AddWatchRequest struct {
	Path string
	Mode AddWatchMode
}

// Encode writes the record.
func (r *AddWatchRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Int(int32(r.Mode))
}

// Decode reads the record.
func (r *AddWatchRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Mode = AddWatchMode(d.Int())
	return d.Err()
}

// ErrorResponse is a failed multi result, and the body of an addWatch reply.
type ErrorResponse struct {
	Err ErrCode
}

// Encode writes the record.
func (r *ErrorResponse) Encode(e *Encoder) {
	e.Int(int32(r.Err))
}

// Decode reads the record.
func (r *ErrorResponse) Decode(d *Decoder) error {
	r.Err = ErrCode(d.Int())
	return d.Err()
}

// CreateResponse answers create (op 1).
type CreateResponse struct {
	Path string
}

// Encode writes the record.
func (r *CreateResponse) Encode(e *Encoder) {
	e.String(r.Path)
}

// Decode reads the record.
func (r *CreateResponse) Decode(d *Decoder) error {
	r.Path = d.String()
	return d.Err()
}

// Create2Response answers create2, createContainer and createTTL.
type Create2Response struct {
	Path string
	Stat Stat
}

// Encode writes the record.
func (r *Create2Response) Encode(e *Encoder) {
	e.String(r.Path)
	r.Stat.Encode(e)
}

// Decode reads the record.
func (r *Create2Response) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Stat.Decode(d)
	return d.Err()
}

// ExistsRequest is the body of exists (op 3).
type ExistsRequest struct {
	Path  string
	Watch bool
}

// Encode writes the record.
func (r *ExistsRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Bool(r.Watch)
}

// Decode reads the record.
func (r *ExistsRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Watch = d.Bool()
	return d.Err()
}

// ExistsResponse answers exists.
type ExistsResponse struct {
	Stat Stat
}

// Encode writes the record.
func (r *ExistsResponse) Encode(e *Encoder) {
	r.Stat.Encode(e)
}

// Decode reads the record.
func (r *ExistsResponse) Decode(d *Decoder) error {
	r.Stat.Decode(d)
	return d.Err()
}

// GetDataResponse answers getData and reconfig.
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

// Encode writes the record.
func (r *GetDataResponse) Encode(e *Encoder) {
	e.Buffer(r.Data)
	r.Stat.Encode(e)
}

// Decode reads the record.
func (r *GetDataResponse) Decode(d *Decoder) error {
	r.Data = d.Buffer()
	r.Stat.Decode(d)
	return d.Err()
}

// GetChildrenResponse answers getChildren; names are unordered.
type GetChildrenResponse struct {
	Children []string
}

// Encode writes the record.
func (r *GetChildrenResponse) Encode(e *Encoder) {
	e.Strings(r.Children)
}

// Decode reads the record.
func (r *GetChildrenResponse) Decode(d *Decoder) error {
	r.Children = d.Strings()
	return d.Err()
}

// GetAllChildrenNumberResponse answers getAllChildrenNumber.
type GetAllChildrenNumberResponse struct {
	TotalNumber int32
}

// Encode writes the record.
func (r *GetAllChildrenNumberResponse) Encode(e *Encoder) {
	e.Int(r.TotalNumber)
}

// Decode reads the record.
func (r *GetAllChildrenNumberResponse) Decode(d *Decoder) error {
	r.TotalNumber = d.Int()
	return d.Err()
}

// GetChildren2Response answers getChildren2.
type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

// Encode writes the record.
func (r *GetChildren2Response) Encode(e *Encoder) {
	e.Strings(r.Children)
	r.Stat.Encode(e)
}

// Decode reads the record.
func (r *GetChildren2Response) Decode(d *Decoder) error {
	r.Children = d.Strings()
	r.Stat.Decode(d)
	return d.Err()
}

// GetACLResponse answers getACL.
type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

// Encode writes the record.
func (r *GetACLResponse) Encode(e *Encoder) {
	encodeACLs(e, r.ACL)
	r.Stat.Encode(e)
}

// Decode reads the record.
func (r *GetACLResponse) Decode(d *Decoder) error {
	r.ACL = decodeACLs(d)
	r.Stat.Decode(d)
	return d.Err()
}

// CheckWatchesRequest is the body of checkWatches (op 17).
type CheckWatchesRequest struct {
	Path string
	Type WatcherType
}

// Encode writes the record.
func (r *CheckWatchesRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Int(int32(r.Type))
}

// Decode reads the record.
func (r *CheckWatchesRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Type = WatcherType(d.Int())
	return d.Err()
}

// RemoveWatchesRequest is the body of removeWatches (op 18).
type RemoveWatchesRequest struct {
	Path string
	Type WatcherType
}

// Encode writes the record.
func (r *RemoveWatchesRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Int(int32(r.Type))
}

// Decode reads the record.
func (r *RemoveWatchesRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Type = WatcherType(d.Int())
	return d.Err()
}

// GetEphemeralsRequest is the body of getEphemerals (op 103).
type GetEphemeralsRequest struct {
	PrefixPath string
}

// Encode writes the record.
func (r *GetEphemeralsRequest) Encode(e *Encoder) {
	e.String(r.PrefixPath)
}

// Decode reads the record.
func (r *GetEphemeralsRequest) Decode(d *Decoder) error {
	r.PrefixPath = d.String()
	return d.Err()
}

// GetEphemeralsResponse answers getEphemerals.
type GetEphemeralsResponse struct {
	Ephemerals []string
}

// Encode writes the record.
func (r *GetEphemeralsResponse) Encode(e *Encoder) {
	e.Strings(r.Ephemerals)
}

// Decode reads the record.
func (r *GetEphemeralsResponse) Decode(d *Decoder) error {
	r.Ephemerals = d.Strings()
	return d.Err()
}

// ClientInfo is one identity in a whoAmI answer.
type ClientInfo struct {
	AuthScheme string
	User       string
}

// Encode writes the record.
func (r *ClientInfo) Encode(e *Encoder) {
	e.String(r.AuthScheme)
	e.String(r.User)
}

// Decode reads the record.
func (r *ClientInfo) Decode(d *Decoder) error {
	r.AuthScheme = d.String()
	r.User = d.String()
	return d.Err()
}

// WhoAmIResponse answers whoAmI (op 107).
type WhoAmIResponse struct {
	ClientInfo []ClientInfo
}

// Encode writes the record.
func (r *WhoAmIResponse) Encode(e *Encoder) {
	encodeClientInfos(e, r.ClientInfo)
}

// Decode reads the record.
func (r *WhoAmIResponse) Decode(d *Decoder) error {
	r.ClientInfo = decodeClientInfos(d)
	return d.Err()
}
func encodeClientInfos(e *Encoder, v []ClientInfo) {
	if v == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(v)))
	for i := range v {
		v[i].Encode(e)
	}
}

func decodeClientInfos(d *Decoder) []ClientInfo {
	n := d.VectorLen(8)
	if d.Err() != nil || n < 0 {
		return nil
	}
	out := make([]ClientInfo, n)
	for i := range out {
		out[i].Decode(d)
	}
	if d.Err() != nil {
		return nil
	}
	return out
}

// DeleteContainerRequest is the body of deleteContainer (op 20). ZooKeeper
// writes it by hand as a buffer holding the path, which has the same bytes
// as a ustring.
type DeleteContainerRequest struct {
	Path string
}

// Encode writes the record.
func (r *DeleteContainerRequest) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads the record.
func (r *DeleteContainerRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	return d.Err()
}

// Empty is the body of requests and replies that have none (ping,
// closeSession, whoAmI requests; delete, setWatches, auth replies, …).
type Empty struct{}

// Encode writes nothing.
func (*Empty) Encode(*Encoder) {}

// Decode reads nothing.
func (*Empty) Decode(d *Decoder) error { return d.Err() }
