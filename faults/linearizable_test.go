package faults

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The checker must catch a stale read and keep the visualisation; an
// unknown write may be placed anywhere after its call, or nowhere.
func TestRegisterCheckerCatchesAStaleReadAndKeepsTheHistory(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	ok := []Op{
		{Client: 1, Kind: "write", Key: "/r", Value: 7, Call: at(0), Return: at(10), Outcome: OK, Version: 1},
		{Client: 2, Kind: "read", Key: "/r", Call: at(20), Return: at(30), Outcome: OK, OutValue: 7, Version: 1},
		{Client: 3, Kind: "cas", Key: "/r", Value: 9, Expect: 1, Call: at(40), Return: at(50), Outcome: Unknown},
		{Client: 2, Kind: "read", Key: "/r", Call: at(60), Return: at(70), Outcome: OK, OutValue: 7, Version: 1},
		{Client: 2, Kind: "read", Key: "/r", Call: at(80), Return: at(90), Outcome: OK, OutValue: 9, Version: 2},
	}
	if v := checkRegisters(ok, t.TempDir()); len(v) != 0 {
		t.Fatalf("a linearizable history was refused: %v", v)
	}
	// A read that returns the old value after a newer write was
	// acknowledged and read.
	stale := append(append([]Op(nil), ok...),
		Op{Client: 1, Kind: "read", Key: "/r", Call: at(100), Return: at(110), Outcome: OK, OutValue: 7, Version: 1})
	dir := t.TempDir()
	v := checkRegisters(stale, dir)
	if len(v) != 1 || !strings.Contains(v[0], "not linearizable") {
		t.Fatalf("a stale read passed: %v", v)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "register-*.html"))
	if len(files) != 1 {
		t.Fatalf("no visualisation kept in %s (%v)", dir, v)
	}
	if b, err := os.ReadFile(files[0]); err != nil || len(b) < 1000 {
		t.Fatalf("visualisation %s: %d bytes, %v", files[0], len(b), err)
	}
}
