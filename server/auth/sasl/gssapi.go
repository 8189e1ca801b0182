package sasl

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// Kerberos is the service side of SASL GSSAPI (RFC 4752) over Kerberos 5
// (RFC 4121), as ZooKeeper's server runs it when its JAAS Server section
// holds a Krb5LoginModule: the service key comes from a keytab, the
// service principal is the JAAS principal (zookeeper/host@REALM).
type Kerberos struct {
	Keytab *keytab.Keytab
	// Service is the service principal without its realm
	// (zookeeper/host), Realm its realm.
	Service types.PrincipalName
	Realm   string
	// MaxClockSkew bounds the authenticator's time against ours
	// (Kerberos' default clockskew, 5 minutes).
	MaxClockSkew time.Duration

	mu        sync.Mutex
	seen      map[string]time.Time // authenticators accepted within the skew
	lastSweep time.Time
}

// replayed records an authenticator and reports whether it was seen
// before; entries older than twice the clock skew are dropped (a replay
// that old fails the time check anyway).
func (k *Kerberos) replayed(a types.Authenticator) bool {
	id := fmt.Sprintf("%s@%s %d.%06d", a.CName.PrincipalNameString(), a.CRealm, a.CTime.Unix(), a.Cusec)
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.seen == nil {
		k.seen = map[string]time.Time{}
	}
	if now.Sub(k.lastSweep) > k.MaxClockSkew/10 {
		k.lastSweep = now
		for key, at := range k.seen {
			if now.Sub(at) > 2*k.MaxClockSkew {
				delete(k.seen, key)
			}
		}
	}
	if _, ok := k.seen[id]; ok {
		return true
	}
	k.seen[id] = now
	return false
}

// KerberosLoginModule is the JAAS module of a Kerberos service.
const KerberosLoginModule = "com.sun.security.auth.module.Krb5LoginModule"

// LoadKerberos reads a Krb5LoginModule entry's keyTab and principal.
func LoadKerberos(m LoginModule) (*Kerberos, error) {
	path := m.Options["keyTab"]
	if path == "" {
		return nil, fmt.Errorf("jaas: %s without keyTab=\"…\" (zkbridge reads the service key from a keytab only)", KerberosLoginModule)
	}
	principal := m.Options["principal"]
	if principal == "" {
		return nil, fmt.Errorf("jaas: %s without principal=\"service/host@REALM\"", KerberosLoginModule)
	}
	kt, err := keytab.Load(path)
	if err != nil {
		return nil, fmt.Errorf("jaas: keytab %s: %w", path, err)
	}
	name, realm := types.ParseSPNString(principal)
	if realm == "" {
		return nil, fmt.Errorf("jaas: principal %q has no @REALM", principal)
	}
	k := &Kerberos{Keytab: kt, Service: name, Realm: realm, MaxClockSkew: 5 * time.Minute}
	// Fail at start, not at the first client, when the keytab lacks the
	// principal (ZooKeeper's login fails the same way).
	found := false
	for _, e := range kt.Entries {
		if e.Principal.Realm == realm && strings.Join(e.Principal.Components, "/") == name.PrincipalNameString() {
			found = true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("jaas: keytab %s holds no key for %s", path, principal)
	}
	return k, nil
}

// ServicePrincipal is service/host@REALM.
func (k *Kerberos) ServicePrincipal() string {
	return k.Service.PrincipalNameString() + "@" + k.Realm
}

// gssState is where a GSSAPI exchange stands.
type gssState int

const (
	gssAwaitAPReq gssState = iota // the initial context token
	gssAwaitEmpty                 // after the AP-REP: the client's empty token
	gssAwaitLayer                 // after our wrapped offer: the client's choice
	gssComplete
)

// SASL GSSAPI security layers (RFC 4752 section 3.3).
const (
	layerNone = 1
	// serverMaxBuffer is Java's default javax.security.sasl.maxbuffer,
	// what ZooKeeper's GssKrb5Server offers.
	serverMaxBuffer = 65536
)

// GSS-API checksum flags in the authenticator (RFC 4121 section 4.1.1.1).
const (
	gssFlagMutual = 2
	gssChecksum   = 0x8003
)

// GSSAPI is one connection's SASL GSSAPI exchange.
type GSSAPI struct {
	k     *Kerberos
	state gssState
	// key protects the wrap tokens: the initiator's subkey if it sent
	// one, else the ticket's session key (we send no acceptor subkey).
	key     types.EncryptionKey
	sendSeq uint64
	peer    string
	authzID string
}

// NewGSSAPI starts an exchange against the service k.
func NewGSSAPI(k *Kerberos) *GSSAPI { return &GSSAPI{k: k} }

// Complete reports whether the client authenticated.
func (g *GSSAPI) Complete() bool { return g.state == gssComplete }

// AuthenticationID is the client's principal (name@REALM) once complete.
func (g *GSSAPI) AuthenticationID() string { return g.peer }

// AuthorizationID is the authzid the client asked for (empty: none).
func (g *GSSAPI) AuthorizationID() string { return g.authzID }

// Step answers one client token.
func (g *GSSAPI) Step(token []byte) (answer []byte, err error) {
	// The Kerberos decoding underneath parses what the client sent; a
	// panic in it fails this exchange, not the server.
	defer func() {
		if r := recover(); r != nil {
			g.state = gssComplete + 1
			answer, err = nil, fmt.Errorf("GSSAPI: malformed token (%v)", r)
		}
	}()
	switch g.state {
	case gssAwaitAPReq:
		return g.accept(token)
	case gssAwaitEmpty:
		// Java's GssKrb5Server: "Handshake expecting no response data".
		if len(token) != 0 {
			return nil, errors.New("GSSAPI: expected an empty token after the AP-REP")
		}
		return g.offer()
	case gssAwaitLayer:
		return nil, g.chooseLayer(token)
	default:
		return nil, errors.New("GSSAPI: token after the exchange completed")
	}
}

// accept verifies the client's AP-REQ and answers the AP-REP (mutual
// authentication) or, without it, goes straight to the layer offer.
func (g *GSSAPI) accept(token []byte) ([]byte, error) {
	var req messages.APReq
	if err := ParseInitialContextToken(token, &req); err != nil {
		return nil, err
	}
	if req.Ticket.Realm != g.k.Realm || !req.Ticket.SName.Equal(g.k.Service) {
		return nil, fmt.Errorf("GSSAPI: ticket for %s@%s, this server is %s",
			req.Ticket.SName.PrincipalNameString(), req.Ticket.Realm, g.k.ServicePrincipal())
	}
	if err := verifyAPReq(&req, g.k); err != nil {
		return nil, fmt.Errorf("GSSAPI: AP-REQ rejected: %w", err)
	}
	a := req.Authenticator
	// A replayed authenticator is refused, as by Java's acceptor.
	if g.k.replayed(a) {
		return nil, errors.New("GSSAPI: AP-REQ replayed")
	}
	flags, err := checksumFlags(a.Cksum)
	if err != nil {
		return nil, err
	}
	g.peer = a.CName.PrincipalNameString() + "@" + a.CRealm
	g.key = req.Ticket.DecryptedEncPart.Key
	if len(a.SubKey.KeyValue) > 0 {
		g.key = a.SubKey
	}
	if !rfc4121Etypes[g.key.KeyType] {
		// RFC 4121 wrap tokens are defined for the AES (and newer)
		// enctypes; DES and RC4 use RFC 1964 tokens, not served.
		return nil, fmt.Errorf("GSSAPI: encryption type %d is not served (use aes256-cts or aes128-cts)", g.key.KeyType)
	}
	if flags&gssFlagMutual == 0 {
		// No AP-REP: our sequence numbers start where the client's do
		// (RFC 1964 section 1.2.1.2); Java's client checks them.
		g.sendSeq = uint64(uint32(a.SeqNumber))
		return g.offer()
	}
	rep, err := g.apRep(req)
	if err != nil {
		return nil, err
	}
	g.state = gssAwaitEmpty
	return rep, nil
}

// verifyAPReq is gokrb5's APReq.Verify without the ticket address check:
// Java's acceptor, given no initiator address by GSS-API, accepts tickets
// that list addresses (kinit -a), and so does ZooKeeper.
func verifyAPReq(req *messages.APReq, k *Kerberos) error {
	if err := req.Ticket.DecryptEncPart(k.Keytab, &req.Ticket.SName); err != nil {
		return fmt.Errorf("the service keytab does not decrypt the ticket: %w", err)
	}
	if ok, err := req.Ticket.Valid(k.MaxClockSkew); err != nil || !ok {
		return fmt.Errorf("ticket not valid now: %v", err)
	}
	if err := req.DecryptAuthenticator(req.Ticket.DecryptedEncPart.Key); err != nil {
		return fmt.Errorf("authenticator: %w", err)
	}
	if !req.Authenticator.CName.Equal(req.Ticket.DecryptedEncPart.CName) || req.Authenticator.CRealm != req.Ticket.DecryptedEncPart.CRealm {
		return errors.New("the authenticator's client is not the ticket's")
	}
	ct := req.Authenticator.CTime.Add(time.Duration(req.Authenticator.Cusec) * time.Microsecond)
	if skew := time.Since(ct); skew > k.MaxClockSkew || -skew > k.MaxClockSkew {
		return fmt.Errorf("clock skew with the client %v exceeds %v", skew.Round(time.Second), k.MaxClockSkew)
	}
	return nil
}

// rfc4121Etypes are the enctypes whose GSS tokens are RFC 4121's:
// aes128-cts-hmac-sha1-96 (17), aes256-cts-hmac-sha1-96 (18),
// aes128-cts-hmac-sha256-128 (19), aes256-cts-hmac-sha384-192 (20).
var rfc4121Etypes = map[int32]bool{17: true, 18: true, 19: true, 20: true}

// checksumFlags reads the GSS flags of the authenticator's 0x8003
// checksum (RFC 4121 section 4.1.1).
func checksumFlags(c types.Checksum) (uint32, error) {
	if c.CksumType != gssChecksum {
		return 0, fmt.Errorf("GSSAPI: authenticator checksum type %d, want 0x8003", c.CksumType)
	}
	if len(c.Checksum) < 24 || binary.LittleEndian.Uint32(c.Checksum[:4]) != 16 {
		return 0, errors.New("GSSAPI: malformed authenticator checksum")
	}
	return binary.LittleEndian.Uint32(c.Checksum[20:24]), nil
}

// apRep is the AP-REP context token: the authenticator's time, our first
// sequence number, encrypted under the session key.
func (g *GSSAPI) apRep(req messages.APReq) ([]byte, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1<<30))
	if err != nil {
		return nil, err
	}
	g.sendSeq = uint64(n.Int64()) + 1 // non-zero: ASN.1 leaves a zero optional out
	part := messages.EncAPRepPart{
		CTime:          req.Authenticator.CTime,
		Cusec:          req.Authenticator.Cusec,
		SequenceNumber: int64(g.sendSeq),
	}
	b, err := asn1.Marshal(part)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: AP-REP: %w", err)
	}
	b = asn1tools.AddASNAppTag(b, asnAppTag.EncAPRepPart)
	enc, err := crypto.GetEncryptedData(b, req.Ticket.DecryptedEncPart.Key, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: AP-REP: %w", err)
	}
	rep := messages.APRep{PVNO: 5, MsgType: msgtype.KRB_AP_REP, EncPart: enc}
	b, err = asn1.Marshal(rep)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: AP-REP: %w", err)
	}
	b = asn1tools.AddASNAppTag(b, asnAppTag.APREP)
	return contextToken(tokAPRep, b), nil
}

// offer is the server's wrapped 4 bytes: the layers it supports (none
// only, as ZooKeeper with qop auth) and its receive buffer size.
func (g *GSSAPI) offer() ([]byte, error) {
	msg := make([]byte, 4)
	binary.BigEndian.PutUint32(msg, serverMaxBuffer)
	msg[0] = layerNone
	tok, err := Wrap(g.key, g.sendSeq, msg)
	if err != nil {
		return nil, err
	}
	g.sendSeq++
	g.state = gssAwaitLayer
	return tok, nil
}

// chooseLayer reads the client's wrapped choice: layer, max size, authzid.
func (g *GSSAPI) chooseLayer(token []byte) error {
	msg, err := Unwrap(g.key, token)
	if err != nil {
		return err
	}
	if len(msg) < 4 {
		return fmt.Errorf("GSSAPI: layer choice of %d bytes, want at least 4", len(msg))
	}
	if msg[0]&layerNone == 0 {
		return fmt.Errorf("GSSAPI: client chose security layer %#x; only none (1) is offered", msg[0])
	}
	g.authzID = string(msg[4:])
	g.state = gssComplete
	return nil
}
