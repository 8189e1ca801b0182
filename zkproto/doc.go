// Package zkproto is the ZooKeeper client wire protocol: the jute binary
// encoding, every request and response record of the client protocol as of
// ZooKeeper 3.9, the connect handshake, multi framing, error codes, event
// types, create modes, permission bits, path validation and length-prefixed
// framing with four-letter-word detection.
//
// It imports nothing of zkbridge and does no I/O beyond io.Reader/io.Writer.
//
// Records mirror zookeeper.jute: same names, same field order, so a reader
// can check them side by side. Every record has Encode(*Encoder) and
// Decode(*Decoder) error. Null and empty are distinct on the wire and in Go:
// a nil []byte or nil slice encodes as length -1 (null); a non-nil empty one
// encodes as length 0. Strings have no null form in Go: a null ustring
// decodes to "" and "" encodes as length 0.
//
// Decoding never allocates more than the input holds: every length is
// checked against the bytes that remain before anything is allocated.
package zkproto
