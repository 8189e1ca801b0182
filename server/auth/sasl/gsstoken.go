package sasl

import (
	"bytes"
	"crypto/hmac"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// krb5OID is the Kerberos 5 GSS-API mechanism, 1.2.840.113554.1.2.2,
// DER-encoded with its tag and length.
var krb5OID = []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}

// Kerberos context token ids (RFC 4121 section 4.1).
var (
	tokAPReq = []byte{0x01, 0x00}
	tokAPRep = []byte{0x02, 0x00}
)

// maxContextToken bounds an initial context token: a ticket with a large
// PAC stays far below (ZooKeeper's jute.maxbuffer bounds the frame too).
const maxContextToken = 1 << 20

// ParseInitialContextToken reads an RFC 2743 initial context token
// ([APPLICATION 0] { krb5 OID, 01 00, AP-REQ }) into req, without
// verifying the AP-REQ.
func ParseInitialContextToken(token []byte, req *messages.APReq) error {
	if len(token) > maxContextToken {
		return fmt.Errorf("GSSAPI: context token of %d bytes", len(token))
	}
	if len(token) < 2 || token[0] != 0x60 {
		return errors.New("GSSAPI: not an initial context token")
	}
	n, rest, err := derLength(token[1:])
	if err != nil {
		return fmt.Errorf("GSSAPI: context token: %w", err)
	}
	if n != len(rest) {
		return fmt.Errorf("GSSAPI: context token says %d bytes, has %d", n, len(rest))
	}
	if !bytes.HasPrefix(rest, krb5OID) {
		return errors.New("GSSAPI: context token is not for the Kerberos 5 mechanism")
	}
	rest = rest[len(krb5OID):]
	if !bytes.HasPrefix(rest, tokAPReq) {
		return errors.New("GSSAPI: context token is not an AP-REQ")
	}
	if err := req.Unmarshal(rest[len(tokAPReq):]); err != nil {
		return fmt.Errorf("GSSAPI: AP-REQ: %w", err)
	}
	return nil
}

// derLength reads a DER definite length (at most 4 bytes of it).
func derLength(b []byte) (int, []byte, error) {
	if len(b) == 0 {
		return 0, nil, errors.New("no length")
	}
	if b[0] < 0x80 {
		return int(b[0]), b[1:], nil
	}
	k := int(b[0] & 0x7f)
	if k == 0 || k > 4 || len(b) < 1+k {
		return 0, nil, errors.New("bad length")
	}
	n := 0
	for _, c := range b[1 : 1+k] {
		n = n<<8 | int(c)
	}
	return n, b[1+k:], nil
}

// contextToken frames a Kerberos message as a GSS-API context token.
func contextToken(id, msg []byte) []byte {
	inner := append(append(append([]byte{}, krb5OID...), id...), msg...)
	var l []byte
	switch n := len(inner); {
	case n < 0x80:
		l = []byte{byte(n)}
	case n < 0x100:
		l = []byte{0x81, byte(n)}
	case n < 0x10000:
		l = []byte{0x82, byte(n >> 8), byte(n)}
	default:
		l = []byte{0x83, byte(n >> 16), byte(n >> 8), byte(n)}
	}
	return append(append([]byte{0x60}, l...), inner...)
}

// Wrap token flags (RFC 4121 section 4.2.2).
const (
	wrapSentByAcceptor = 0x01
	wrapSealed         = 0x02
	wrapHeaderLen      = 16
)

// wrapHeader is a wrap token header with the given EC and RRC.
func wrapHeader(flags byte, ec, rrc uint16, seq uint64) []byte {
	h := make([]byte, wrapHeaderLen)
	h[0], h[1], h[2], h[3] = 0x05, 0x04, flags, 0xff
	binary.BigEndian.PutUint16(h[4:6], ec)
	binary.BigEndian.PutUint16(h[6:8], rrc)
	binary.BigEndian.PutUint64(h[8:16], seq)
	return h
}

// Wrap is an acceptor's integrity-only wrap token (RFC 4121 section
// 4.2.4): header | msg | checksum over msg | header.
func Wrap(key types.EncryptionKey, seq uint64, msg []byte) ([]byte, error) {
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI wrap: %w", err)
	}
	ec := uint16(et.GetHMACBitLength() / 8)
	sum, err := et.GetChecksumHash(key.KeyValue, append(append([]byte{}, msg...), wrapHeader(wrapSentByAcceptor, 0, 0, seq)...), keyusage.GSSAPI_ACCEPTOR_SEAL)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI wrap: %w", err)
	}
	if len(sum) < int(ec) {
		return nil, fmt.Errorf("GSSAPI wrap: checksum of %d bytes for encryption type %d", len(sum), key.KeyType)
	}
	out := wrapHeader(wrapSentByAcceptor, ec, 0, seq)
	out = append(out, msg...)
	return append(out, sum[:ec]...), nil
}

// Unwrap checks an initiator's wrap token, sealed or not, and returns
// its message.
func Unwrap(key types.EncryptionKey, token []byte) ([]byte, error) {
	if len(token) < wrapHeaderLen || token[0] != 0x05 || token[1] != 0x04 || token[3] != 0xff {
		return nil, errors.New("GSSAPI: not a wrap token")
	}
	flags := token[2]
	if flags&wrapSentByAcceptor != 0 {
		return nil, errors.New("GSSAPI: wrap token sent by an acceptor, not the client")
	}
	ec := int(binary.BigEndian.Uint16(token[4:6]))
	rrc := int(binary.BigEndian.Uint16(token[6:8]))
	seq := binary.BigEndian.Uint64(token[8:16])
	body := append([]byte{}, token[wrapHeaderLen:]...)
	if len(body) > 0 {
		// Undo the right rotation (Windows rotates; MIT and Java send 0).
		r := rrc % len(body)
		body = append(body[r:], body[:r]...)
	}
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI unwrap: %w", err)
	}
	if flags&wrapSealed != 0 {
		// gokrb5's decryption slices without checking: too short a
		// ciphertext would panic (found by FuzzGSSAPIUnwrap).
		if len(body) < et.GetConfounderByteSize()+et.GetHMACBitLength()/8+wrapHeaderLen {
			return nil, errors.New("GSSAPI unwrap: sealed token too short")
		}
		plain, err := et.DecryptMessage(key.KeyValue, body, keyusage.GSSAPI_INITIATOR_SEAL)
		if err != nil {
			return nil, fmt.Errorf("GSSAPI unwrap: %w", err)
		}
		// plaintext | EC filler bytes | the header with RRC 0.
		if len(plain) < ec+wrapHeaderLen {
			return nil, errors.New("GSSAPI unwrap: sealed token too short")
		}
		tail := plain[len(plain)-wrapHeaderLen:]
		if !bytes.Equal(tail, wrapHeader(flags, uint16(ec), 0, seq)) {
			return nil, errors.New("GSSAPI unwrap: sealed header does not match")
		}
		return plain[:len(plain)-wrapHeaderLen-ec], nil
	}
	if ec != et.GetHMACBitLength()/8 || len(body) < ec {
		return nil, fmt.Errorf("GSSAPI unwrap: checksum length %d for encryption type %d", ec, key.KeyType)
	}
	msg, sum := body[:len(body)-ec], body[len(body)-ec:]
	want, err := et.GetChecksumHash(key.KeyValue, append(append([]byte{}, msg...), wrapHeader(flags, 0, 0, seq)...), keyusage.GSSAPI_INITIATOR_SEAL)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI unwrap: %w", err)
	}
	if len(want) < ec || !hmac.Equal(want[:ec], sum) {
		return nil, errors.New("GSSAPI unwrap: checksum mismatch")
	}
	return msg, nil
}
