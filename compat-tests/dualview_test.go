package compattests

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/client"
)

// The dual view: during a cutover, servers still in ZooKeeper mode and
// servers on native RPCs share one 3-node zkbridge cluster and see one
// store. Each scenario has both kinds of member at once.

const (
	dualTick = 500 * time.Millisecond
	dualTTL  = 2 * time.Second // a lease of 4 ticks
)

// nativeMemberEnv makes the test binary a native member process: it
// registers and keeps its lease alive until killed (TestMain-free helper
// process, started by startNativeMember).
const nativeMemberEnv = "ZKBRIDGE_DUALVIEW_MEMBER"

// TestDualViewNativeMemberProcess is the native member process; as a test
// it does nothing.
func TestDualViewNativeMemberProcess(t *testing.T) {
	spec := os.Getenv(nativeMemberEnv)
	if spec == "" {
		return
	}
	addrs, member, _ := strings.Cut(spec, "|")
	ctx := context.Background()
	c, err := client.Dial(ctx, strings.Split(addrs, ","))
	if err != nil {
		fmt.Println("DIAL", err)
		os.Exit(2)
	}
	l, err := c.Register(ctx, client.RegisterSpec{Group: "dual", MemberID: member, Payload: []byte("native"), TTL: dualTTL})
	if err != nil {
		fmt.Println("REGISTER", err)
		os.Exit(2)
	}
	fmt.Printf("REGISTERED %d %d\n", l.Epoch(), l.ID())
	<-l.Lost()
	fmt.Println("LOST", l.Err())
	os.Exit(3)
}

// startNativeMember runs a native member process and waits for its
// registration; it returns the process and the lease's epoch.
func startNativeMember(t *testing.T, addrs []string, member string) (*exec.Cmd, int64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDualViewNativeMemberProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), nativeMemberEnv+"="+strings.Join(addrs, ",")+"|"+member)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		var epoch, id int64
		if _, err := fmt.Sscanf(l, "REGISTERED %d %d", &epoch, &id); err != nil {
			t.Fatalf("native member: %q", l)
		}
		return cmd, epoch
	case <-time.After(30 * time.Second):
		t.Fatal("the native member did not register within 30 s")
	}
	return nil, 0
}

func TestDualView(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node cluster of processes")
	}
	c := StartProcCluster(t, 3, ClusterOptions{TickTime: dualTick})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	nc, err := client.Dial(ctx, c.NativeAddrs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	zc := gzConnect(t, c.Addrs(), 10*time.Second, nil)

	t.Run("members of both kinds see each other and the ZooKeeper watcher sees a killed native member go", func(t *testing.T) {
		for _, p := range []string{"/dual", "/dual/ids"} {
			if _, err := zc.Create(p, nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatal(err)
			}
		}
		zkMember := gzConnect(t, c.Addrs(), 10*time.Second, nil)
		if _, err := zkMember.Create("/dual/ids/zk-1", []byte("zk"), zk.FlagEphemeral, openACL); err != nil {
			t.Fatal(err)
		}
		proc, epoch := startNativeMember(t, c.NativeAddrs(), "native-1")
		// Another client's write: a ZooKeeper session sees it for sure only
		// after a sync (its node may not have applied it yet).
		if _, err := zc.Sync("/dual/ids"); err != nil {
			t.Fatal(err)
		}
		kids, _, err := zc.Children("/dual/ids")
		sort.Strings(kids)
		if err != nil || !slices.Equal(kids, []string{"native-1", "zk-1"}) {
			t.Fatalf("ZooKeeper view of the group: %v %v", kids, err)
		}
		ls, err := nc.List(ctx, "/dual/ids")
		if err != nil || !slices.Equal(ls.Children, []string{"native-1", "zk-1"}) {
			t.Fatalf("native view of the group: %v %v", ls, err)
		}
		_, st, watch, err := zc.GetW("/dual/ids/native-1")
		if err != nil || st.Czxid != epoch || st.EphemeralOwner == 0 {
			t.Fatalf("the native member as ZooKeeper sees it: %+v %v (epoch %d)", st, err, epoch)
		}
		feed := nc.Watch(ctx, []string{"/dual/ids"}, ls.Zxid+1)
		defer feed.Close()

		if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		select {
		case ev := <-watch:
			if ev.Type != zk.EventNodeDeleted {
				t.Fatalf("ZooKeeper watcher: %+v", ev)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the killed native member's znode did not go within 20 s")
		}
		gone := time.Since(killed)
		// The lease's deadline is at most a TTL after its last heartbeat;
		// the leader checks deadlines every half tick.
		if limit := dualTTL + dualTick + 500*time.Millisecond; gone > limit {
			t.Fatalf("the ZooKeeper watch fired %v after the kill, later than TTL %v + a tick (+0.5 s)", gone, dualTTL)
		}
		t.Logf("killed native member's znode deleted %v after the kill (TTL %v, tick %v)", gone.Round(time.Millisecond), dualTTL, dualTick)

		// Closing the ZooKeeper member's session shows in the change feed.
		zkMember.Close()
		want := []string{"CHANGE_TYPE_DELETED /dual/ids/native-1", "CHANGE_TYPE_DELETED /dual/ids/zk-1"}
		var got []string
		deadline := time.After(20 * time.Second)
		for len(got) < len(want) {
			select {
			case ev := <-feed.Events():
				if ev.Record != nil {
					for _, ch := range ev.Record.Changes {
						got = append(got, ch.Type.String()+" "+ch.Path)
					}
				}
			case <-deadline:
				t.Fatalf("change feed %v, want %v (err %v)", got, want, feed.Err())
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("change feed %v, want %v", got, want)
		}
	})

	t.Run("a cutover to native refuses the ZooKeeper writer and keeps the native writer", func(t *testing.T) {
		if _, err := zc.Create("/dual/meta", []byte("v0"), 0, openACL); err != nil {
			t.Fatal(err)
		}
		if err := nc.SetCutoverPolicy(ctx, "/dual/meta", zkbridgev1.CutoverMode_CUTOVER_MODE_NATIVE); err != nil {
			t.Fatal(err)
		}
		defer nc.SetCutoverPolicy(ctx, "/dual/meta", zkbridgev1.CutoverMode_CUTOVER_MODE_ZK)
		// Every node applies the policy: a ZooKeeper writer on any of them is refused.
		for i, addr := range c.Addrs() {
			w := gzConnect(t, []string{addr}, 10*time.Second, nil)
			if _, err := w.Set("/dual/meta", []byte("stale"), -1); !errors.Is(err, zk.ErrNoAuth) {
				t.Fatalf("ZooKeeper writer on node %d: %v, want NoAuth", i+1, err)
			}
			w.Close()
		}
		if _, err := nc.Put(ctx, "/dual/meta", []byte("native")); err != nil {
			t.Fatalf("native writer: %v", err)
		}
		if data, _, err := zc.Get("/dual/meta"); err != nil || string(data) != "native" {
			t.Fatalf("after the cutover ZooKeeper reads %q %v", data, err)
		}
	})

	t.Run("AllocateID racing Curator-format increments never overlaps", func(t *testing.T) {
		const path = "/dual/seqid"
		var mu sync.Mutex
		seen := map[int64]bool{}
		dup := int64(-1)
		take := func(first, n int64) {
			mu.Lock()
			defer mu.Unlock()
			for v := first; v < first+n; v++ {
				if seen[v] {
					dup = v
				}
				seen[v] = true
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, 6)
		for g := 0; g < 3; g++ {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for i := 0; i < 20; i++ {
					first, last, err := nc.AllocateID(ctx, path, 5)
					if err != nil {
						errs <- err
						return
					}
					take(first, last-first+1)
				}
			}()
			go func() {
				defer wg.Done()
				w := gzConnect(t, c.Addrs()[g:g+1], 10*time.Second, nil)
				defer w.Close()
				for i := 0; i < 20; i++ {
					pre, err := curatorAdd(w, path, 1)
					if err != nil {
						errs <- err
						return
					}
					take(pre, 1)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if dup >= 0 {
			t.Fatalf("value %d handed out twice", dup)
		}
		data, _, err := zc.Get(path)
		if want := int64(3*20*5 + 3*20); err != nil || int64(binary.BigEndian.Uint64(data)) != want || int64(len(seen)) != want {
			t.Fatalf("counter %v (%d values seen), want %d", data, len(seen), want)
		}
	})

	t.Run("the change feed across a leader kill has no gap and no duplicate", func(t *testing.T) {
		if _, err := zc.Create("/feed", nil, 0, openACL); err != nil {
			t.Fatal(err)
		}
		st, err := nc.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		feed := nc.Watch(ctx, []string{"/feed"}, st.LastZxid+1)
		defer feed.Close()
		writer := gzConnect(t, c.Addrs(), 10*time.Second, nil)
		w := startAckWriter(writer, "/feed")
		w.waitAcks(t, 50, 30*time.Second)
		lead := c.WaitLeader(30 * time.Second)
		c.Kill(lead)
		w.waitAcks(t, w.count()+100, 60*time.Second)
		w.halt()
		acked := w.count()
		seen := map[string]int{}
		var last int64
		deadline := time.After(60 * time.Second)
		// A create in flight at the halt may apply unacknowledged: wait for
		// the acknowledged ones.
		missing := func() int {
			n := 0
			for i := 0; i < acked; i++ {
				if seen[fmt.Sprintf("/feed/%06d", i)] == 0 {
					n++
				}
			}
			return n
		}
		for missing() > 0 {
			select {
			case ev := <-feed.Events():
				if ev.Snapshot != nil {
					t.Fatalf("the feed fell back to a snapshot at %d", ev.Snapshot.Offset)
				}
				if ev.Record == nil {
					continue
				}
				if ev.Record.Offset <= last {
					t.Fatalf("offset %d after %d: the feed went back", ev.Record.Offset, last)
				}
				last = ev.Record.Offset
				for _, ch := range ev.Record.Changes {
					if ch.Type == zkbridgev1.ChangeType_CHANGE_TYPE_CREATED {
						seen[ch.Path]++
					}
				}
			case <-deadline:
				t.Fatalf("the feed lacks %d of %d acknowledged creates (err %v)", missing(), acked, feed.Err())
			}
		}
		for i := 0; i < acked; i++ {
			p := fmt.Sprintf("/feed/%06d", i)
			if seen[p] != 1 {
				t.Fatalf("%s delivered %d times", p, seen[p])
			}
		}
		t.Logf("%d acknowledged creates across a leader kill, each delivered once, offsets increasing", acked)
	})
}

// curatorAdd is DistributedAtomicLong.add through the ZooKeeper port: read
// the value and version, setData at that version (create when missing),
// again on a conflict. It returns the value before.
func curatorAdd(c *zk.Conn, path string, delta int64) (int64, error) {
	for {
		data, st, err := c.Get(path)
		next := make([]byte, 8)
		if errors.Is(err, zk.ErrNoNode) {
			binary.BigEndian.PutUint64(next, uint64(delta))
			if _, err := c.Create(path, next, 0, openACL); err == nil {
				return 0, nil
			} else if !errors.Is(err, zk.ErrNodeExists) {
				return 0, err
			}
			continue
		}
		if err != nil {
			return 0, err
		}
		cur := int64(binary.BigEndian.Uint64(data))
		binary.BigEndian.PutUint64(next, uint64(cur+delta))
		if _, err := c.Set(path, next, st.Version); err == nil {
			return cur, nil
		} else if !errors.Is(err, zk.ErrBadVersion) {
			return 0, err
		}
	}
}
