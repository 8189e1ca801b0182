package migrate

import (
	"encoding/base64"
)

// parseNodeLine decodes a node record line as the Writer writes it
// (`{"node":{...}}`, no whitespace, strings of printable ASCII without
// escapes, integers) several times faster than encoding/json, which had
// been nearly all of an import's CPU in the tool. ok is false for anything
// else (escapes, other whitespace, unknown or differently cased keys,
// numbers out of range, other records): the caller then decodes the line
// with encoding/json, so the result is always what encoding/json gives.
//
// memo, when not nil, carries the last ACL decoded from one line to the
// next: a node whose ACL is written exactly as the previous one's gets
// the same slice (nodes mostly share a few ACLs), so the Nodes of one
// reader may share ACL slices and must treat them as read-only.
func parseNodeLine(line []byte, memo *aclMemo) (n *Node, ok bool) {
	const open, closing = `{"node":{`, `}}`
	if len(line) < len(open)+len(closing) || string(line[:len(open)]) != open || string(line[len(line)-2:]) != closing {
		return nil, false
	}
	p := &lineParser{b: line[len(open) : len(line)-1], memo: memo} // from the node's first key to its closing brace
	n = &Node{}
	if p.byte('}') {
		return n, p.end()
	}
	for {
		key, ok := p.rawStr()
		if !ok || !p.byte(':') {
			return nil, false
		}
		switch string(key) { // compared without a copy
		case "path":
			n.Path, ok = p.str()
		case "data":
			n.Data, ok = p.base64()
		case "acl":
			n.ACL, ok = p.acl()
		case "czxid":
			n.Czxid, ok = p.int(64)
		case "mzxid":
			n.Mzxid, ok = p.int(64)
		case "pzxid":
			n.Pzxid, ok = p.int(64)
		case "ctime":
			n.Ctime, ok = p.int(64)
		case "mtime":
			n.Mtime, ok = p.int(64)
		case "version":
			n.Version, ok = p.int32()
		case "cversion":
			n.Cversion, ok = p.int32()
		case "aversion":
			n.Aversion, ok = p.int32()
		case "ephemeral_owner":
			n.EphemeralOwner, ok = p.int(64)
		case "num_children":
			n.NumChildren, ok = p.int32()
		case "creates":
			n.Creates, ok = p.int32()
		case "ancestor":
			n.Ancestor, ok = p.boolean()
		default:
			return nil, false
		}
		if !ok {
			return nil, false
		}
		if p.byte('}') {
			return n, p.end()
		}
		if !p.byte(',') {
			return nil, false
		}
	}
}

type lineParser struct {
	b    []byte
	i    int
	memo *aclMemo
}

// aclMemo is the last ACL array parsed: its text and its value.
type aclMemo struct {
	raw []byte
	acl []ACL
}

func (p *lineParser) end() bool { return p.i == len(p.b) }

// byte consumes c if it is next.
func (p *lineParser) byte(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *lineParser) literal(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// rawStr returns a string's bytes: printable ASCII, no escapes.
func (p *lineParser) rawStr() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			p.i++
			return p.b[start : p.i-1], true
		}
		if c < 0x20 || c > 0x7e || c == '\\' {
			return nil, false
		}
		p.i++
	}
	return nil, false
}

func (p *lineParser) str() (string, bool) {
	s, ok := p.rawStr()
	return string(s), ok
}

// base64 reads null (nil) or a standard base64 string ("" is empty, not
// nil), as encoding/json does for []byte.
func (p *lineParser) base64() ([]byte, bool) {
	if p.literal("null") {
		return nil, true
	}
	s, ok := p.rawStr()
	if !ok {
		return nil, false
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	m, err := base64.StdEncoding.Decode(out, s)
	if err != nil {
		return nil, false
	}
	return out[:m], true
}

// int reads a JSON integer (no fraction or exponent, no leading zero)
// that fits in bits.
func (p *lineParser) int(bits int) (int64, bool) {
	neg := p.byte('-')
	digits := p.i
	var v uint64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		if v > (1<<63)/10 {
			return 0, false // past any int64
		}
		v = v*10 + uint64(p.b[p.i]-'0')
		p.i++
	}
	if p.i == digits || (p.b[digits] == '0' && p.i-digits > 1) {
		return 0, false
	}
	limit := uint64(1) << (bits - 1) // |min| of a signed integer of bits
	if neg {
		if v > limit {
			return 0, false
		}
		return -int64(v-1) - 1, true // -limit too, without overflowing
	}
	if v >= limit {
		return 0, false
	}
	return int64(v), true
}

func (p *lineParser) int32() (int32, bool) {
	v, ok := p.int(32)
	return int32(v), ok
}

func (p *lineParser) boolean() (bool, bool) {
	switch {
	case p.literal("true"):
		return true, true
	case p.literal("false"):
		return false, true
	}
	return false, false
}

// acl reads null (nil) or an array of ACL objects ([] is empty, not nil).
// The same text as the memo's gives the memo's slice: parsing it again
// would end at the same place with the same value.
func (p *lineParser) acl() ([]ACL, bool) {
	if p.literal("null") {
		return nil, true
	}
	if m := p.memo; m != nil && len(m.raw) > 0 && len(p.b)-p.i >= len(m.raw) && string(p.b[p.i:p.i+len(m.raw)]) == string(m.raw) {
		p.i += len(m.raw)
		return m.acl, true
	}
	start := p.i
	acl, ok := p.aclArray()
	if ok && p.memo != nil {
		p.memo.raw = append(p.memo.raw[:0], p.b[start:p.i]...)
		p.memo.acl = acl
	}
	return acl, ok
}

func (p *lineParser) aclArray() ([]ACL, bool) {
	if !p.byte('[') {
		return nil, false
	}
	out := []ACL{}
	if p.byte(']') {
		return out, true
	}
	for {
		var a ACL
		if !p.byte('{') {
			return nil, false
		}
		if !p.byte('}') {
			for {
				key, ok := p.rawStr()
				if !ok || !p.byte(':') {
					return nil, false
				}
				switch string(key) {
				case "perms":
					a.Perms, ok = p.int32()
				case "scheme":
					a.Scheme, ok = p.str()
				case "id":
					a.ID, ok = p.str()
				default:
					return nil, false
				}
				if !ok {
					return nil, false
				}
				if p.byte('}') {
					break
				}
				if !p.byte(',') {
					return nil, false
				}
			}
		}
		out = append(out, a)
		if p.byte(']') {
			return out, true
		}
		if !p.byte(',') {
			return nil, false
		}
	}
}
