package sm

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// checkLog wants the change log to hold exactly the records of want, in
// order, with trimmed as its watermark, and its metadata to agree.
func checkLog(t *testing.T, h *harness, want []int64, trimmed int64) {
	t.Helper()
	v := h.view()
	defer v.Close()
	recs, gotTrimmed, err := v.ChangeLog(0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, r := range recs {
		got = append(got, r.Zxid)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || gotTrimmed != trimmed {
		t.Fatalf("log %v trimmed %d, want %v trimmed %d", got, gotTrimmed, want, trimmed)
	}
	// The metadata the next Update starts from is the one stored.
	raw, err := readRaw(h.s.db, keyLogMeta)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := decodeLogMeta(raw)
	if err != nil {
		t.Fatal(err)
	}
	if h.s.logs.loaded && h.s.logs.meta != stored {
		t.Fatalf("log metadata kept %+v, stored %+v", h.s.logs.meta, stored)
	}
}

// Trimming keeps the newest records within the limits across Updates of
// several entries, a reopen and a snapshot recovery (each of which builds
// the index again from the database).
func TestChangeLogIndexAcrossReopenAndRecovery(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, ChangeLogMaxRecords: 5}
	h := newHarness(t, cfg)
	s := h.newSession() // a record too
	var zx []int64
	createMany := func(h *harness, n int) {
		t.Helper()
		cmds := make([]*Command, n)
		for i := range cmds {
			cmds[i] = h.cmd(s, &Create{OpCode: 1, Path: fmt.Sprintf("/n%03d", len(zx)+i), Data: []byte("d"), ACL: open})
		}
		for _, r := range h.update(cmds...) {
			zx = append(zx, r.Zxid)
		}
	}
	for i := 0; i < 4; i++ {
		createMany(h, 3)
	}
	checkLog(t, h, zx[len(zx)-5:], zx[len(zx)-6])

	if err := h.s.Sync(); err != nil {
		t.Fatal(err)
	}
	h.s.Close()
	h2 := newHarness(t, cfg)
	h2.conn, h2.seq, h2.auth, h2.index = h.conn, h.seq, h.auth, h.index
	createMany(h2, 2)
	checkLog(t, h2, zx[len(zx)-5:], zx[len(zx)-6])

	snap := saveSnapshot(t, h2.s)
	h3 := newHarness(t, Config{ChangeLogMaxRecords: 5})
	h3.newSession() // a log and an index of its own, which recovery must drop
	if err := h3.s.RecoverFromSnapshot(bytes.NewReader(snap), make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	h3.conn, h3.seq, h3.auth, h3.index = h2.conn, h2.seq, h2.auth, h3.s.AppliedIndex()
	createMany(h3, 7)
	checkLog(t, h3, zx[len(zx)-5:], zx[len(zx)-6])
}

// The byte limit trims too, and a record larger than the limit goes at once.
func TestChangeLogIndexByteLimit(t *testing.T) {
	h := newHarness(t, Config{ChangeLogMaxBytes: 400})
	s := h.newSession()
	var zx []int64
	for i := 0; i < 6; i++ {
		zx = append(zx, h.create(s, fmt.Sprintf("/b%d", i), bytes.Repeat([]byte("x"), 100), 0).Zxid)
	}
	v := h.view()
	recs, trimmed, err := v.ChangeLog(0, 100)
	v.Close()
	if err != nil || len(recs) == 0 || len(recs) >= 6 || recs[len(recs)-1].Zxid != zx[5] {
		t.Fatalf("log of %d records, trimmed %d, err %v", len(recs), trimmed, err)
	}
	var size int
	for _, r := range recs {
		size += len(r.encode())
	}
	if size > 400 || trimmed != zx[5-len(recs)] {
		t.Fatalf("%d records of %d bytes kept (limit 400), trimmed %d", len(recs), size, trimmed)
	}
	h.create(s, "/big", bytes.Repeat([]byte("y"), 500), 0)
	checkLog(t, h, nil, h.s.LastZxid())
}

// A state whose change log disagrees with its metadata (tables lost under
// a damaged MANIFEST that Pebble still opened, in the fault suite's
// corrupt-snapshot nemesis) is refused at open, with an error, instead of
// failing the first Update mid-apply (a panic).
func TestOpenRefusesAChangeLogThatDisagreesWithItsMetadata(t *testing.T) {
	cfg := Config{Dir: t.TempDir()}
	h := newHarness(t, cfg)
	s := h.newSession()
	var first int64
	for i := 0; i < 3; i++ {
		r := h.update(h.cmd(s, &Create{OpCode: 1, Path: fmt.Sprintf("/n%d", i), Data: []byte("d"), ACL: open}))
		if i == 0 {
			first = r[0].Zxid
		}
	}
	if err := h.s.Sync(); err != nil {
		t.Fatal(err)
	}
	name := h.s.dbName
	h.s.Close()

	db, err := pebble.Open(filepath.Join(cfg.Dir, name), &pebble.Options{FormatMajorVersion: pebble.FormatValueSeparation})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Delete(logKey(first), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	_, err = New(cfg).Open(nil)
	if err == nil || !strings.Contains(err.Error(), "change log holds") {
		t.Fatalf("open of a state whose change log lost a record: %v; want the mismatch reported", err)
	}
}
