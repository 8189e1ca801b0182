package sm

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/zkbridge/zkbridge/zkproto"
)

// benchSM opens a state machine with one session and the parent /b.
func benchSM(b *testing.B, dir string) (*StateMachine, int64, uint64) {
	b.Helper()
	s := New(Config{Dir: dir})
	if _, err := s.Open(nil); err != nil {
		b.Fatal(err)
	}
	cs := &Command{Header: Header{Conn: 1, Time: 1}, Op: &CreateSession{Timeout: 1000, Password: []byte("p")}}
	out, err := s.Update([]sm.Entry{{Index: 1, Cmd: cs.Encode()}})
	if err != nil {
		b.Fatal(err)
	}
	r, _ := DecodeResult(out[0].Result.Data)
	c := &Command{Header: Header{Session: r.Session, Conn: 1, Seq: 1, Time: 2}, Op: &Create{OpCode: zkproto.OpCreate, Path: "/b", ACL: open}}
	if _, err := s.Update([]sm.Entry{{Index: 2, Cmd: c.Encode()}}); err != nil {
		b.Fatal(err)
	}
	return s, r.Session, 2
}

// benchApply measures apply throughput, one write per entry, batch entries
// per Update call (dragonboat hands up to 512 per call).
func benchApply(b *testing.B, batch int, setData bool) {
	s, sess, idx := benchSM(b, b.TempDir())
	defer s.Close()
	data := make([]byte, 100)
	rand.New(rand.NewSource(1)).Read(data)
	seq := uint64(1)
	if setData {
		seq++
		c := &Command{Header: Header{Session: sess, Conn: 1, Seq: seq, Time: 3}, Op: &Create{OpCode: zkproto.OpCreate, Path: "/b/x", Data: data, ACL: open}}
		idx++
		if _, err := s.Update([]sm.Entry{{Index: idx, Cmd: c.Encode()}}); err != nil {
			b.Fatal(err)
		}
	}
	ents := make([]sm.Entry, 0, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		seq++
		idx++
		var op Op
		if setData {
			op = &SetData{Path: "/b/x", Data: data, Version: -1}
		} else {
			op = &Create{OpCode: zkproto.OpCreate, Path: "/b/n" + strconv.Itoa(i), Data: data, ACL: open}
		}
		c := &Command{Header: Header{Session: sess, Conn: 1, Seq: seq, Time: int64(i)}, Op: op}
		ents = append(ents, sm.Entry{Index: idx, Cmd: c.Encode()})
		if len(ents) == batch || i == b.N-1 {
			out, err := s.Update(ents)
			if err != nil {
				b.Fatal(err)
			}
			if r, _ := DecodeResult(out[len(out)-1].Result.Data); r.Err != 0 {
				b.Fatalf("apply failed: %v", r.Err)
			}
			ents = ents[:0]
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

func BenchmarkApplyCreate(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) { benchApply(b, n, false) })
	}
}

func BenchmarkApplySetData(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) { benchApply(b, n, true) })
	}
}

func dirSize(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkMillionZnodes loads ZKBRIDGE_BENCH_ZNODES (default 1,000,000)
// znodes of 100 random bytes (1000 parents × 1000 children, one create per
// entry, 512 entries per Update) and reports Pebble bytes on disk per znode
// (after flush and full compaction) and the Go heap after GC at 10% and at
// 100% of the load. Skipped unless ZKBRIDGE_BENCH_1M is set: it takes
// minutes.
func BenchmarkMillionZnodes(b *testing.B) {
	if os.Getenv("ZKBRIDGE_BENCH_1M") == "" {
		b.Skip("set ZKBRIDGE_BENCH_1M=1 to run")
	}
	total := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("ZKBRIDGE_BENCH_ZNODES")); err == nil && v > 0 {
		total = v
	}
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		s, sess, idx := benchSM(b, dir)
		data := make([]byte, 100)
		rnd := rand.New(rand.NewSource(1))
		seq := uint64(1)
		const perParent = 1000
		ents := make([]sm.Entry, 0, 512)
		var heap10 uint64
		flush := func() {
			if len(ents) == 0 {
				return
			}
			if _, err := s.Update(ents); err != nil {
				b.Fatal(err)
			}
			ents = ents[:0]
		}
		add := func(op Op) {
			seq++
			idx++
			c := &Command{Header: Header{Session: sess, Conn: 1, Seq: seq, Time: 1_700_000_000_000 + int64(idx)}, Op: op}
			ents = append(ents, sm.Entry{Index: idx, Cmd: c.Encode()})
			if len(ents) == cap(ents) {
				flush()
			}
		}
		heap0 := heapAfterGC()
		for n := 0; n < total; n++ {
			if n%perParent == 0 {
				add(&Create{OpCode: zkproto.OpCreate, Path: fmt.Sprintf("/b/p%04d", n/perParent), ACL: open})
			}
			rnd.Read(data)
			add(&Create{OpCode: zkproto.OpCreate, Path: fmt.Sprintf("/b/p%04d/n%04d", n/perParent, n%perParent), Data: append([]byte(nil), data...), ACL: open})
			if n+1 == total/10 {
				flush()
				heap10 = heapAfterGC()
			}
		}
		flush()
		heap100 := heapAfterGC()
		db := s.db
		if err := db.Flush(); err != nil {
			b.Fatal(err)
		}
		if err := db.Compact(b.Context(), []byte{0}, []byte{0xff}, true); err != nil {
			b.Fatal(err)
		}
		v, _ := s.View()
		cnt, _ := v.AllChildrenNumber("/b")
		v.Close()
		if cnt != int64(total+total/perParent) {
			b.Fatalf("count %d", cnt)
		}
		size := dirSize(b, dir)
		m := db.Metrics()
		sst := m.Total().TablesSize
		lm, _ := readRaw(db, keyLogMeta)
		meta, _ := decodeLogMeta(lm)
		// dir includes the WAL and recycled WAL files (bounded by the memtable
		// settings, not by the node count); sst is the live sstables, which
		// also hold the retained change log (reported separately).
		b.ReportMetric(float64(size)/float64(total), "dirBytes/znode")
		b.ReportMetric(float64(sst)/float64(total), "sstBytes/znode")
		b.ReportMetric(float64(meta.Bytes)/1e6, "changeLogMB")
		b.ReportMetric((float64(sst)-float64(meta.Bytes))/float64(total)-100, "treeOverheadBytes/znode")
		b.ReportMetric(float64(heap10)/1e6, "heapMB@10%")
		b.ReportMetric(float64(heap100)/1e6, "heapMB@100%")
		b.ReportMetric(float64(heap0)/1e6, "heapMB@0")
		s.Close()
	}
}

// BenchmarkApplyMulti applies multis of ops setData each (the bench
// workload's multi), 64 entries per Update; allocations are per multi.
func BenchmarkApplyMulti(b *testing.B) {
	for _, ops := range []int{10, 100} {
		b.Run(fmt.Sprintf("ops=%d", ops), func(b *testing.B) {
			s, sess, idx := benchSM(b, b.TempDir())
			defer s.Close()
			data := make([]byte, 100)
			seq := uint64(1)
			var setup []sm.Entry
			for i := 0; i < ops; i++ {
				seq++
				idx++
				c := &Command{Header: Header{Session: sess, Conn: 1, Seq: seq, Time: 3}, Op: &Create{OpCode: zkproto.OpCreate, Path: "/b/x" + strconv.Itoa(i), ACL: open}}
				setup = append(setup, sm.Entry{Index: idx, Cmd: c.Encode()})
			}
			if _, err := s.Update(setup); err != nil {
				b.Fatal(err)
			}
			multi := &Multi{}
			for i := 0; i < ops; i++ {
				multi.Ops = append(multi.Ops, &SetData{Path: "/b/x" + strconv.Itoa(i), Data: data, Version: -1})
			}
			ents := make([]sm.Entry, 0, 64)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				seq++
				idx++
				c := &Command{Header: Header{Session: sess, Conn: 1, Seq: seq, Time: int64(i)}, Op: multi}
				ents = append(ents, sm.Entry{Index: idx, Cmd: c.Encode()})
				if len(ents) == cap(ents) || i == b.N-1 {
					out, err := s.Update(ents)
					if err != nil {
						b.Fatal(err)
					}
					if r, _ := DecodeResult(out[len(out)-1].Result.Data); r.Err != 0 {
						b.Fatalf("apply failed: %v", r.Err)
					}
					ents = ents[:0]
				}
			}
		})
	}
}
