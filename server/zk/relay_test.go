package zk

import (
	"bytes"
	"strings"
	"testing"
)

// A preamble reads back as written; one of another version, with a wrong
// magic, no certificate or a chain past the bound is refused.
func TestRelayPreamble(t *testing.T) {
	want := RelayPreamble{Tenant: "far", ClientAddr: "127.0.0.1:50000", Chain: [][]byte{[]byte("leaf"), []byte("intermediate")}}
	var b bytes.Buffer
	if err := WriteRelayPreamble(&b, want); err != nil {
		t.Fatal(err)
	}
	raw := append([]byte(nil), b.Bytes()...)
	got, err := readRelayPreamble(&b)
	if err != nil || got.Tenant != want.Tenant || got.ClientAddr != want.ClientAddr || len(got.Chain) != 2 ||
		string(got.Chain[0]) != "leaf" || string(got.Chain[1]) != "intermediate" {
		t.Fatalf("read back %+v, %v", got, err)
	}

	other := append([]byte(nil), raw...)
	other[4] = relayVersion + 1
	if _, err := readRelayPreamble(bytes.NewReader(other)); err == nil || !strings.Contains(err.Error(), "version") {
		t.Fatalf("another version: %v", err)
	}
	if _, err := readRelayPreamble(bytes.NewReader(append([]byte("ZKBX"), raw[4:]...))); err == nil {
		t.Fatal("a wrong magic was read as a preamble")
	}
	if _, err := readRelayPreamble(bytes.NewReader(raw[:len(raw)-3])); err == nil {
		t.Fatal("a truncated preamble was read")
	}
	if err := WriteRelayPreamble(&b, RelayPreamble{Tenant: "far"}); err == nil {
		t.Fatal("a preamble without a certificate was written")
	}
	if err := WriteRelayPreamble(&b, RelayPreamble{Tenant: "far", Chain: [][]byte{make([]byte, relayMaxChain+1)}}); err == nil {
		t.Fatal("a chain past the bound was written")
	}

	var answer bytes.Buffer
	_ = writeRelayAnswer(&answer, "")
	_ = writeRelayAnswer(&answer, "not hosted here")
	if err := ReadRelayAnswer(&answer); err != nil {
		t.Fatalf("an acceptance read as %v", err)
	}
	if err := ReadRelayAnswer(&answer); err == nil || !strings.Contains(err.Error(), "not hosted here") {
		t.Fatalf("a refusal read as %v", err)
	}
}
