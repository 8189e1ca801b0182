package zkproto

import "strconv"

// OpCode is a request type (ZooDefs.OpCode).
type OpCode int32

// Opcodes of the client protocol, as in ZooDefs.OpCode (identical in 3.8 and 3.9).
const (
	OpNotify               OpCode = 0
	OpCreate               OpCode = 1
	OpDelete               OpCode = 2
	OpExists               OpCode = 3
	OpGetData              OpCode = 4
	OpSetData              OpCode = 5
	OpGetACL               OpCode = 6
	OpSetACL               OpCode = 7
	OpGetChildren          OpCode = 8
	OpSync                 OpCode = 9
	OpPing                 OpCode = 11
	OpGetChildren2         OpCode = 12
	OpCheck                OpCode = 13
	OpMulti                OpCode = 14
	OpCreate2              OpCode = 15
	OpReconfig             OpCode = 16
	OpCheckWatches         OpCode = 17
	OpRemoveWatches        OpCode = 18
	OpCreateContainer      OpCode = 19
	OpDeleteContainer      OpCode = 20
	OpCreateTTL            OpCode = 21
	OpMultiRead            OpCode = 22
	OpAuth                 OpCode = 100
	OpSetWatches           OpCode = 101
	OpSASL                 OpCode = 102
	OpGetEphemerals        OpCode = 103
	OpGetAllChildrenNumber OpCode = 104
	OpSetWatches2          OpCode = 105
	OpAddWatch             OpCode = 106
	OpWhoAmI               OpCode = 107
	OpCreateSession        OpCode = -10
	OpCloseSession         OpCode = -11
	OpError                OpCode = -1
)

var opNames = map[OpCode]string{
	OpNotify: "notification", OpCreate: "create", OpDelete: "delete", OpExists: "exists",
	OpGetData: "getData", OpSetData: "setData", OpGetACL: "getACL", OpSetACL: "setACL",
	OpGetChildren: "getChildren", OpSync: "sync", OpPing: "ping", OpGetChildren2: "getChildren2",
	OpCheck: "check", OpMulti: "multi", OpCreate2: "create2", OpReconfig: "reconfig",
	OpCheckWatches: "checkWatches", OpRemoveWatches: "removeWatches",
	OpCreateContainer: "createContainer", OpDeleteContainer: "deleteContainer",
	OpCreateTTL: "createTTL", OpMultiRead: "multiRead", OpAuth: "auth",
	OpSetWatches: "setWatches", OpSASL: "sasl", OpGetEphemerals: "getEphemerals",
	OpGetAllChildrenNumber: "getAllChildrenNumber", OpSetWatches2: "setWatches2",
	OpAddWatch: "addWatch", OpWhoAmI: "whoAmI", OpCreateSession: "createSession",
	OpCloseSession: "closeSession", OpError: "error",
}

// String returns ZooKeeper's name of the opcode, or its number.
func (o OpCode) String() string {
	if s, ok := opNames[o]; ok {
		return s
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Known reports whether o is an opcode of the client protocol.
func (o OpCode) Known() bool {
	_, ok := opNames[o]
	return ok
}

// IsWrite reports whether o is a write that becomes a transaction and
// consumes a zxid (ZooKeeper's PrepRequestProcessor writes).
func (o OpCode) IsWrite() bool {
	switch o {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpDelete, OpDeleteContainer,
		OpSetData, OpSetACL, OpCheck, OpMulti, OpReconfig, OpCreateSession, OpCloseSession:
		return true
	}
	return false
}

// Special xids (ClientCnxn).
const (
	XidNotification int32 = -1 // server→client watch event
	XidPing         int32 = -2 // ping request and reply
	XidAuth         int32 = -4 // AuthPacket (Java client)
	XidSetWatches   int32 = -8 // SetWatches / SetWatches2 on reconnect (Java client)
)

// DefaultMaxBuffer is jute.maxbuffer's default: the largest frame a server
// or client accepts (0xfffff bytes).
const DefaultMaxBuffer = 0xfffff
