package zkproto

// NewRequest returns an empty request record for opcode op (the body that
// follows the RequestHeader), or false for an opcode clients cannot send.
// For createSession it is the ConnectRequest that opens a connection.
func NewRequest(op OpCode) (Record, bool) {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return new(CreateRequest), true
	case OpCreateTTL:
		return new(CreateTTLRequest), true
	case OpDelete:
		return new(DeleteRequest), true
	case OpExists:
		return new(ExistsRequest), true
	case OpGetData:
		return new(GetDataRequest), true
	case OpSetData:
		return new(SetDataRequest), true
	case OpGetACL:
		return new(GetACLRequest), true
	case OpSetACL:
		return new(SetACLRequest), true
	case OpGetChildren:
		return new(GetChildrenRequest), true
	case OpSync:
		return new(SyncRequest), true
	case OpGetChildren2:
		return new(GetChildren2Request), true
	case OpCheck:
		return new(CheckVersionRequest), true
	case OpMulti, OpMultiRead:
		return new(MultiRequest), true
	case OpReconfig:
		return new(ReconfigRequest), true
	case OpCheckWatches:
		return new(CheckWatchesRequest), true
	case OpRemoveWatches:
		return new(RemoveWatchesRequest), true
	case OpDeleteContainer:
		return new(DeleteContainerRequest), true
	case OpAuth:
		return new(AuthPacket), true
	case OpSetWatches:
		return new(SetWatches), true
	case OpSASL:
		return new(GetSASLRequest), true
	case OpGetEphemerals:
		return new(GetEphemeralsRequest), true
	case OpGetAllChildrenNumber:
		return new(GetAllChildrenNumberRequest), true
	case OpSetWatches2:
		return new(SetWatches2), true
	case OpAddWatch:
		return new(AddWatchRequest), true
	case OpPing, OpWhoAmI, OpCloseSession:
		return new(Empty), true
	case OpCreateSession:
		return new(ConnectRequest), true
	}
	return nil, false
}

// NewResponse returns an empty response record for opcode op (the body that
// follows a ReplyHeader with err 0), or false for an unknown opcode. Ops
// with no reply body get *Empty. OpError gets *ErrorResponse.
func NewResponse(op OpCode) (Record, bool) {
	switch op {
	case OpCreate:
		return new(CreateResponse), true
	case OpCreate2, OpCreateContainer, OpCreateTTL:
		return new(Create2Response), true
	case OpExists:
		return new(ExistsResponse), true
	case OpGetData, OpReconfig:
		return new(GetDataResponse), true
	case OpSetData:
		return new(SetDataResponse), true
	case OpGetACL:
		return new(GetACLResponse), true
	case OpSetACL:
		return new(SetACLResponse), true
	case OpGetChildren:
		return new(GetChildrenResponse), true
	case OpSync:
		return new(SyncResponse), true
	case OpGetChildren2:
		return new(GetChildren2Response), true
	case OpMulti, OpMultiRead:
		return new(MultiResponse), true
	case OpSASL:
		return new(SetSASLResponse), true
	case OpGetEphemerals:
		return new(GetEphemeralsResponse), true
	case OpGetAllChildrenNumber:
		return new(GetAllChildrenNumberResponse), true
	case OpAddWatch, OpError:
		return new(ErrorResponse), true
	case OpWhoAmI:
		return new(WhoAmIResponse), true
	case OpCreateSession:
		return new(ConnectResponse), true
	case OpDelete, OpPing, OpCheck, OpCheckWatches, OpRemoveWatches, OpDeleteContainer,
		OpAuth, OpSetWatches, OpSetWatches2, OpCloseSession:
		return new(Empty), true
	}
	return nil, false
}
