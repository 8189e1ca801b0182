package sasl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// GSSAPIClient is the client side of SASL GSSAPI for Go callers and tests
// (the ZooKeeper Java client, kazoo's pure-sasl with python3-kerberos do
// the same): the AP-REQ from a service ticket, the AP-REP check, the
// security-layer reply with no layer.
type GSSAPIClient struct {
	// CName and Realm are the client's principal; Ticket and SessionKey
	// its service ticket (gokrb5's client.GetServiceTicket).
	CName      types.PrincipalName
	Realm      string
	Ticket     messages.Ticket
	SessionKey types.EncryptionKey
	// AuthzID is the authorization id sent at the end (empty: none).
	AuthzID string

	auth        types.Authenticator
	key         types.EncryptionKey
	acceptorKey bool
	stage       int
}

// InitialToken is the GSS-API initial context token (AP-REQ, mutual
// authentication requested).
func (c *GSSAPIClient) InitialToken() ([]byte, error) {
	a, err := types.NewAuthenticator(c.Realm, c.CName)
	if err != nil {
		return nil, err
	}
	et, err := crypto.GetEtype(c.SessionKey.KeyType)
	if err != nil {
		return nil, err
	}
	if err := a.GenerateSeqNumberAndSubKey(c.SessionKey.KeyType, et.GetKeyByteSize()); err != nil {
		return nil, err
	}
	sum := make([]byte, 24)
	binary.LittleEndian.PutUint32(sum[:4], 16)                            // channel bindings length: none
	binary.LittleEndian.PutUint32(sum[20:], gssFlagMutual|0x08|0x10|0x20) // mutual, sequence, conf, integ
	a.Cksum = types.Checksum{CksumType: gssChecksum, Checksum: sum}
	req, err := messages.NewAPReq(c.Ticket, c.SessionKey, a)
	if err != nil {
		return nil, err
	}
	types.SetFlag(&req.APOptions, flags.APOptionMutualRequired)
	b, err := req.Marshal()
	if err != nil {
		return nil, err
	}
	c.auth, c.key = a, a.SubKey
	return contextToken(tokAPReq, b), nil
}

// Done reports whether the last token (the wrapped layer choice) went
// out: the server's next answer ends the exchange.
func (c *GSSAPIClient) Done() bool { return c.stage >= 2 }

// Respond answers the server's tokens: the AP-REP (an empty answer), then
// the wrapped layer offer (the wrapped choice of no layer).
func (c *GSSAPIClient) Respond(challenge []byte) ([]byte, error) {
	c.stage++
	switch c.stage {
	case 1:
		return []byte{}, c.checkAPRep(challenge)
	case 2:
		offer, err := c.unwrapOffer(challenge)
		if err != nil {
			return nil, err
		}
		if len(offer) != 4 || offer[0]&layerNone == 0 {
			return nil, fmt.Errorf("GSSAPI: server offers %x, not the no-layer option", offer)
		}
		msg := append([]byte{layerNone, 0, 0, 0}, c.AuthzID...)
		return c.wrap(msg)
	default:
		return nil, errors.New("GSSAPI: the exchange is over")
	}
}

func (c *GSSAPIClient) checkAPRep(token []byte) error {
	prefix := contextToken(tokAPRep, nil)
	if len(token) < len(prefix) || token[0] != 0x60 {
		return errors.New("GSSAPI: not an AP-REP context token")
	}
	_, rest, err := derLength(token[1:])
	if err != nil || len(rest) < len(krb5OID)+2 || string(rest[len(krb5OID):len(krb5OID)+2]) != string(tokAPRep) {
		return errors.New("GSSAPI: not an AP-REP context token")
	}
	var rep messages.APRep
	if err := rep.Unmarshal(rest[len(krb5OID)+2:]); err != nil {
		return fmt.Errorf("GSSAPI: AP-REP: %w", err)
	}
	plain, err := crypto.DecryptEncPart(rep.EncPart, c.SessionKey, keyusage.AP_REP_ENCPART)
	if err != nil {
		return fmt.Errorf("GSSAPI: AP-REP does not decrypt with the session key: %w", err)
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		return fmt.Errorf("GSSAPI: AP-REP: %w", err)
	}
	if !part.CTime.Equal(c.auth.CTime.Truncate(time.Second)) || part.Cusec != c.auth.Cusec {
		return errors.New("GSSAPI: AP-REP does not echo our authenticator's time")
	}
	if len(part.Subkey.KeyValue) > 0 {
		c.key, c.acceptorKey = part.Subkey, true
	}
	return nil
}

func (c *GSSAPIClient) unwrapOffer(token []byte) ([]byte, error) {
	if len(token) < wrapHeaderLen || token[0] != 0x05 || token[1] != 0x04 || token[2]&wrapSentByAcceptor == 0 || token[2]&wrapSealed != 0 {
		return nil, errors.New("GSSAPI: the offer is not an acceptor's integrity wrap token")
	}
	et, err := crypto.GetEtype(c.key.KeyType)
	if err != nil {
		return nil, err
	}
	ec := int(binary.BigEndian.Uint16(token[4:6]))
	body := token[wrapHeaderLen:]
	if ec != et.GetHMACBitLength()/8 || len(body) < ec || binary.BigEndian.Uint16(token[6:8]) != 0 {
		return nil, errors.New("GSSAPI: malformed offer")
	}
	msg := body[:len(body)-ec]
	hdr := wrapHeader(token[2], 0, 0, binary.BigEndian.Uint64(token[8:16]))
	if !et.VerifyChecksum(c.key.KeyValue, append(append([]byte{}, msg...), hdr...), body[len(body)-ec:], keyusage.GSSAPI_ACCEPTOR_SEAL) {
		return nil, errors.New("GSSAPI: the offer's checksum does not verify")
	}
	return msg, nil
}

func (c *GSSAPIClient) wrap(msg []byte) ([]byte, error) {
	et, err := crypto.GetEtype(c.key.KeyType)
	if err != nil {
		return nil, err
	}
	var fl byte
	if c.acceptorKey {
		fl = 0x04 // AcceptorSubkey
	}
	seq := uint64(c.auth.SeqNumber)
	sum, err := et.GetChecksumHash(c.key.KeyValue, append(append([]byte{}, msg...), wrapHeader(fl, 0, 0, seq)...), keyusage.GSSAPI_INITIATOR_SEAL)
	if err != nil {
		return nil, err
	}
	ec := et.GetHMACBitLength() / 8
	out := append(wrapHeader(fl, uint16(ec), 0, seq), msg...)
	return append(out, sum[:ec]...), nil
}
