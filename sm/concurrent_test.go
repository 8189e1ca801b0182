package sm

import (
	"fmt"
	"sync"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/zkbridge/zkbridge/zkproto"
)

// Reads through a View stay consistent while Update and RecoverFromSnapshot
// run: a directory's numChildren always equals the children listed.
func TestReadsConsistentUnderUpdate(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	h.mustCreate(s, "/d")
	snap := saveSnapshot(t, h.s)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				out, err := h.s.Lookup(Query(func(v *View) (any, error) {
					names, st, err := v.Children("/d")
					if err != nil {
						return nil, err
					}
					if int(st.NumChildren) != len(names) {
						return nil, fmt.Errorf("numChildren %d, %d names", st.NumChildren, len(names))
					}
					return len(names), nil
				}))
				if err != nil {
					errc <- err
					return
				}
				_ = out
			}
		}()
	}
	for i := 0; i < 300; i++ {
		var ents []sm.Entry
		for j := 0; j < 4; j++ {
			h.index++
			h.seq[s]++
			c := &Command{Header: Header{Session: s, Conn: h.conn[s], Seq: h.seq[s], Time: 1},
				Op: &Create{OpCode: zkproto.OpCreate, Path: fmt.Sprintf("/d/n%d-%d", i, j), ACL: open}}
			ents = append(ents, sm.Entry{Index: h.index, Cmd: c.Encode()})
		}
		if _, err := h.s.Update(ents); err != nil {
			t.Fatal(err)
		}
		if i == 150 {
			if err := h.s.RecoverFromSnapshot(bytesReader(snap), make(chan struct{})); err != nil {
				t.Fatal(err)
			}
			h.seq[s] = 0 // the snapshot predates every write of s
			h.index = h.s.AppliedIndex()
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
}
