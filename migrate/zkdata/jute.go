package zkdata

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ACL is one jute ACL: permissions and an identity (scheme:id).
type ACL struct {
	Perms  int32
	Scheme string
	ID     string
}

// StatPersisted is the stat ZooKeeper stores for a node (zookeeper.jute).
type StatPersisted struct {
	Czxid          int64
	Mzxid          int64
	Ctime          int64
	Mtime          int64
	Version        int32
	Cversion       int32
	Aversion       int32
	EphemeralOwner int64
	Pzxid          int64
}

// Ephemeral owners with a special meaning (ZooKeeper's EphemeralType).
const (
	ContainerEphemeralOwner = int64(-0x8000000000000000) // 0x8000000000000000
	ttlMask                 = int64(-0x100000000000000)  // 0xFF00000000000000
	maxTTL                  = int64(0x000000FFFFFFFFFF)
)

// TTLEphemeralOwner is the ephemeralOwner ZooKeeper stores for a TTL node.
func TTLEphemeralOwner(ttl int64) int64 { return ttlMask | ttl }

// EphemeralKind classifies an ephemeralOwner as ZooKeeper's EphemeralType
// does (with extended types enabled): "" (persistent), "ephemeral",
// "container" or "ttl" (with the TTL in milliseconds).
func EphemeralKind(owner int64) (kind string, ttl int64) {
	switch {
	case owner == 0:
		return "", 0
	case owner == ContainerEphemeralOwner:
		return "container", 0
	case owner&ttlMask == ttlMask:
		return "ttl", owner &^ ttlMask
	default:
		return "ephemeral", 0
	}
}

var errShort = errors.New("record ends early")

// dec decodes jute's binary encoding from a byte slice; the first error
// sticks and later reads return zero values.
type dec struct {
	b   []byte
	off int
	err error
}

func (d *dec) fail(err error) {
	if d.err == nil {
		d.err = fmt.Errorf("at byte %d: %w", d.off, err)
	}
}

func (d *dec) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.fail(errShort)
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *dec) remaining() int { return len(d.b) - d.off }

func (d *dec) int32() int32 {
	p := d.take(4)
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

func (d *dec) int64() int64 {
	p := d.take(8)
	if p == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(p))
}

func (d *dec) bool() bool {
	p := d.take(1)
	return p != nil && p[0] != 0
}

// buffer reads a jute buffer; length -1 is a null buffer (nil).
func (d *dec) buffer() []byte {
	n := d.int32()
	if d.err != nil || n == -1 {
		return nil
	}
	if n < -1 {
		d.fail(fmt.Errorf("negative length %d", n))
		return nil
	}
	p := d.take(int(n))
	if p == nil {
		return nil
	}
	return append([]byte{}, p...)
}

func (d *dec) string() string {
	n := d.int32()
	if d.err != nil || n == -1 {
		return ""
	}
	if n < -1 {
		d.fail(fmt.Errorf("negative string length %d", n))
		return ""
	}
	return string(d.take(int(n)))
}

// count reads a vector length; -1 (null) is 0. Each element takes at least
// min bytes, which bounds the count by what is left.
func (d *dec) count(min int) int {
	n := d.int32()
	if d.err != nil || n == -1 {
		return 0
	}
	if n < -1 || int64(n)*int64(min) > int64(d.remaining()) {
		d.fail(fmt.Errorf("bad vector length %d", n))
		return 0
	}
	return int(n)
}

func (d *dec) acls() []ACL {
	n := d.count(12)
	if n == 0 {
		return nil
	}
	out := make([]ACL, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, ACL{Perms: d.int32(), Scheme: d.string(), ID: d.string()})
	}
	return out
}

func (d *dec) stat() StatPersisted {
	return StatPersisted{
		Czxid: d.int64(), Mzxid: d.int64(), Ctime: d.int64(), Mtime: d.int64(),
		Version: d.int32(), Cversion: d.int32(), Aversion: d.int32(),
		EphemeralOwner: d.int64(), Pzxid: d.int64(),
	}
}
