package zkproto

import "strconv"

// ErrCode is a ZooKeeper error code (KeeperException.Code). It implements
// error with the message ZooKeeper's client prints.
type ErrCode int32

// Error codes (KeeperException.Code).
const (
	ErrOK                           ErrCode = 0
	ErrSystemError                  ErrCode = -1
	ErrRuntimeInconsistency         ErrCode = -2
	ErrDataInconsistency            ErrCode = -3
	ErrConnectionLoss               ErrCode = -4
	ErrMarshallingError             ErrCode = -5
	ErrUnimplemented                ErrCode = -6
	ErrOperationTimeout             ErrCode = -7
	ErrBadArguments                 ErrCode = -8
	ErrUnknownSession               ErrCode = -12
	ErrNewConfigNoQuorum            ErrCode = -13
	ErrReconfigInProgress           ErrCode = -14
	ErrAPIError                     ErrCode = -100
	ErrNoNode                       ErrCode = -101
	ErrNoAuth                       ErrCode = -102
	ErrBadVersion                   ErrCode = -103
	ErrNoChildrenForEphemerals      ErrCode = -108
	ErrNodeExists                   ErrCode = -110
	ErrNotEmpty                     ErrCode = -111
	ErrSessionExpired               ErrCode = -112
	ErrInvalidCallback              ErrCode = -113
	ErrInvalidACL                   ErrCode = -114
	ErrAuthFailed                   ErrCode = -115
	ErrSessionMoved                 ErrCode = -118
	ErrNotReadOnly                  ErrCode = -119
	ErrEphemeralOnLocalSession      ErrCode = -120
	ErrNoWatcher                    ErrCode = -121
	ErrRequestTimeout               ErrCode = -122
	ErrReconfigDisabled             ErrCode = -123
	ErrSessionClosedRequireSASLAuth ErrCode = -124
	ErrQuotaExceeded                ErrCode = -125
	ErrThrottledOp                  ErrCode = -127
)

type errInfo struct{ name, msg string }

// errInfos holds each code's enum name and KeeperException.getCodeMessage text.
var errInfos = map[ErrCode]errInfo{
	ErrOK:                           {"OK", "ok"},
	ErrSystemError:                  {"SYSTEMERROR", "SystemError"},
	ErrRuntimeInconsistency:         {"RUNTIMEINCONSISTENCY", "RuntimeInconsistency"},
	ErrDataInconsistency:            {"DATAINCONSISTENCY", "DataInconsistency"},
	ErrConnectionLoss:               {"CONNECTIONLOSS", "ConnectionLoss"},
	ErrMarshallingError:             {"MARSHALLINGERROR", "MarshallingError"},
	ErrUnimplemented:                {"UNIMPLEMENTED", "Unimplemented"},
	ErrOperationTimeout:             {"OPERATIONTIMEOUT", "OperationTimeout"},
	ErrBadArguments:                 {"BADARGUMENTS", "BadArguments"},
	ErrUnknownSession:               {"UNKNOWNSESSION", "Unknown session"},
	ErrNewConfigNoQuorum:            {"NEWCONFIGNOQUORUM", "NewConfigNoQuorum"},
	ErrReconfigInProgress:           {"RECONFIGINPROGRESS", "ReconfigInProgress"},
	ErrAPIError:                     {"APIERROR", "APIError"},
	ErrNoNode:                       {"NONODE", "NoNode"},
	ErrNoAuth:                       {"NOAUTH", "NoAuth"},
	ErrBadVersion:                   {"BADVERSION", "BadVersion"},
	ErrNoChildrenForEphemerals:      {"NOCHILDRENFOREPHEMERALS", "NoChildrenForEphemerals"},
	ErrNodeExists:                   {"NODEEXISTS", "NodeExists"},
	ErrNotEmpty:                     {"NOTEMPTY", "Directory not empty"},
	ErrSessionExpired:               {"SESSIONEXPIRED", "Session expired"},
	ErrInvalidCallback:              {"INVALIDCALLBACK", "Invalid callback"},
	ErrInvalidACL:                   {"INVALIDACL", "InvalidACL"},
	ErrAuthFailed:                   {"AUTHFAILED", "AuthFailed"},
	ErrSessionMoved:                 {"SESSIONMOVED", "Session moved"},
	ErrNotReadOnly:                  {"NOTREADONLY", "Not a read-only call"},
	ErrEphemeralOnLocalSession:      {"EPHEMERALONLOCALSESSION", "Ephemeral node on local session"},
	ErrNoWatcher:                    {"NOWATCHER", "No such watcher"},
	ErrRequestTimeout:               {"REQUESTTIMEOUT", "Request timeout"},
	ErrReconfigDisabled:             {"RECONFIGDISABLED", "Reconfig is disabled"},
	ErrSessionClosedRequireSASLAuth: {"SESSIONCLOSEDREQUIRESASLAUTH", "Session closed because client failed to authenticate"},
	ErrQuotaExceeded:                {"QUOTAEXCEEDED", "Quota has exceeded"},
	ErrThrottledOp:                  {"THROTTLEDOP", "Op throttled due to high load"},
}

// Name returns the KeeperException.Code enum name, e.g. "NONODE".
func (c ErrCode) Name() string {
	if i, ok := errInfos[c]; ok {
		return i.name
	}
	return "UNKNOWN(" + strconv.Itoa(int(c)) + ")"
}

// Message returns KeeperException.getCodeMessage, e.g. "NoNode".
func (c ErrCode) Message() string {
	if i, ok := errInfos[c]; ok {
		return i.msg
	}
	return "Unknown error " + strconv.Itoa(int(c))
}

// Known reports whether c is a code ZooKeeper defines.
func (c ErrCode) Known() bool {
	_, ok := errInfos[c]
	return ok
}

// Error returns the text of KeeperException.getMessage without a path:
// "KeeperErrorCode = NoNode".
func (c ErrCode) Error() string { return "KeeperErrorCode = " + c.Message() }

// ForPath returns the error message ZooKeeper's client prints for a
// failure on path: "KeeperErrorCode = NoNode for /a".
func (c ErrCode) ForPath(path string) string { return c.Error() + " for " + path }
