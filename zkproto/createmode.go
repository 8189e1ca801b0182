package zkproto

import (
	"fmt"
	"math"
)

// CreateMode is the flags field of a create request (CreateMode.java).
type CreateMode int32

// Create modes. There is no ephemeral+TTL and no container+sequential mode.
const (
	ModePersistent                  CreateMode = 0
	ModeEphemeral                   CreateMode = 1
	ModePersistentSequential        CreateMode = 2
	ModeEphemeralSequential         CreateMode = 3
	ModeContainer                   CreateMode = 4
	ModePersistentWithTTL           CreateMode = 5
	ModePersistentSequentialWithTTL CreateMode = 6
)

// MaxTTL is the largest TTL in milliseconds (EphemeralType.MAX_TTL, 40 bits).
const MaxTTL int64 = 0xFFFFFFFFFF

// Markers ZooKeeper stores in StatPersisted.ephemeralOwner for special nodes.
// Clients always see 0 for them. zkbridge session ids never take these values.
const (
	ContainerEphemeralOwner int64 = math.MinInt64       // 0x8000000000000000
	TTLEphemeralOwnerMask   int64 = -0x0100000000000000 // 0xFF00000000000000 | ttl
)

// ParseCreateMode validates flags; an unknown value is ErrBadArguments.
func ParseCreateMode(flags int32) (CreateMode, error) {
	if flags < int32(ModePersistent) || flags > int32(ModePersistentSequentialWithTTL) {
		return 0, ErrBadArguments
	}
	return CreateMode(flags), nil
}

// IsEphemeral reports whether nodes of this mode die with their session.
func (m CreateMode) IsEphemeral() bool { return m == ModeEphemeral || m == ModeEphemeralSequential }

// IsSequential reports whether a %010d suffix is appended to the path.
func (m CreateMode) IsSequential() bool {
	return m == ModePersistentSequential || m == ModeEphemeralSequential || m == ModePersistentSequentialWithTTL
}

// IsContainer reports whether the mode is CONTAINER.
func (m CreateMode) IsContainer() bool { return m == ModeContainer }

// IsTTL reports whether the mode carries a TTL.
func (m CreateMode) IsTTL() bool {
	return m == ModePersistentWithTTL || m == ModePersistentSequentialWithTTL
}

// String returns the Java enum name.
func (m CreateMode) String() string {
	switch m {
	case ModePersistent:
		return "PERSISTENT"
	case ModeEphemeral:
		return "EPHEMERAL"
	case ModePersistentSequential:
		return "PERSISTENT_SEQUENTIAL"
	case ModeEphemeralSequential:
		return "EPHEMERAL_SEQUENTIAL"
	case ModeContainer:
		return "CONTAINER"
	case ModePersistentWithTTL:
		return "PERSISTENT_WITH_TTL"
	case ModePersistentSequentialWithTTL:
		return "PERSISTENT_SEQUENTIAL_WITH_TTL"
	}
	return fmt.Sprintf("CreateMode(%d)", int32(m))
}

// ValidateTTL checks a createTTL (op 21) request's ttl against its mode as
// ZooKeeper does: a TTL mode needs 0 < ttl <= MaxTTL; any other mode sent
// with op 21 is BadArguments.
func ValidateTTL(m CreateMode, ttl int64) error {
	if !m.IsTTL() || ttl <= 0 || ttl > MaxTTL {
		return ErrBadArguments
	}
	return nil
}

// SequentialSuffix formats a sequence number as ZooKeeper does
// (String.format("%010d", n)); after overflow n is negative.
func SequentialSuffix(n int32) string { return fmt.Sprintf("%010d", n) }
