package tlsconf

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"strings"
	"unicode/utf16"
)

// JavaDN renders a certificate's subject as Java's
// X500Principal.getName() (RFC 2253) does; it is the identity ZooKeeper's
// X509AuthenticationProvider gives a client, so x509 ACLs written for
// ZooKeeper match here too.
//
// Go's pkix.Name.String() differs: it groups repeated attributes into one
// multi-valued RDN (OU=a+OU=b), orders them its own way and, re-encoding
// parsed values, writes UTF8String where the certificate had IA5String.
// So this works from the raw subject, one RDN at a time, with each value's
// original DER bytes.
func JavaDN(cert *x509.Certificate) string {
	dn, err := JavaDNFromRaw(cert.RawSubject)
	if err != nil {
		// A certificate Go parsed has a well-formed subject; fall back
		// to Go's rendering rather than to nothing.
		return cert.Subject.String()
	}
	return dn
}

// attribute is one AttributeTypeAndValue with its value's raw encoding.
type attribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// JavaDNFromRaw renders a DER-encoded Name (an RDNSequence).
func JavaDNFromRaw(raw []byte) (string, error) {
	var rdns []asn1.RawValue
	if _, err := asn1.Unmarshal(raw, &rdns); err != nil {
		return "", err
	}
	parts := make([]string, 0, len(rdns))
	for i := len(rdns) - 1; i >= 0; i-- { // RFC 2253: last RDN first
		var set []attribute
		if _, err := asn1.UnmarshalWithParams(rdns[i].FullBytes, &set, "set"); err != nil {
			return "", err
		}
		avas := make([]string, 0, len(set))
		for _, a := range set {
			avas = append(avas, javaAVA(a))
		}
		parts = append(parts, strings.Join(avas, "+"))
	}
	return strings.Join(parts, ","), nil
}

// rfc2253Keywords are the attribute names Java's AVA writes in RFC 2253
// form; any other attribute is written by OID with a hex value.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// javaAVA is AVA.toRFC2253String: keyword=value with RFC 2253 escapes, or
// OID=#hex of the value's DER encoding for attributes without a keyword
// and values that are not strings.
func javaAVA(a attribute) string {
	oid := a.Type.String()
	keyword, known := rfc2253Keywords[oid]
	if !known {
		keyword = oid
	}
	s, isString := derString(a.Value)
	if !known || !isString {
		return keyword + "=#" + hex.EncodeToString(a.Value.FullBytes)
	}
	return keyword + "=" + escapeRFC2253(s)
}

// derString decodes the string types Java's non-canonical RFC 2253 form
// writes as text.
func derString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, 27 /* GeneralString */ :
		return string(v.Bytes), true
	case asn1.TagT61String:
		// Java reads TeletexString as ISO-8859-1.
		r := make([]rune, len(v.Bytes))
		for i, b := range v.Bytes {
			r[i] = rune(b)
		}
		return string(r), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}

// escapeRFC2253 escapes as Java's AVA does: every one of ,=+<>#;"\ gets a
// backslash (not only a leading #), NUL becomes \00, leading and trailing
// spaces (and carriage returns) are escaped; other characters, non-ASCII
// included, stay as they are.
func escapeRFC2253(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case strings.ContainsRune(",=+<>#;\"\\", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == 0:
			b.WriteString(`\00`)
		default:
			b.WriteRune(r)
		}
	}
	out := []rune(b.String())
	lead := 0
	for lead < len(out) && (out[lead] == ' ' || out[lead] == '\r') {
		lead++
	}
	trail := len(out) - 1
	for trail >= 0 && (out[trail] == ' ' || out[trail] == '\r') {
		trail--
	}
	var e strings.Builder
	for i, r := range out {
		if i < lead || i > trail {
			e.WriteByte('\\')
		}
		e.WriteRune(r)
	}
	return e.String()
}
