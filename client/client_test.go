package client

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/server"
)

// A watcher streaming from a node that is stopped resumes on another one:
// offsets strictly increase and every write made is seen exactly once.
func TestWatchFailsOverWithoutGapOrDuplicate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nodes")
	}
	servers := startCluster(t, 3, 100*time.Millisecond, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	cw := dial(t, nativeAddrs(servers))
	cwr := dial(t, nativeAddrs(servers))
	if _, err := cwr.Put(ctx, "/feed", nil); err != nil {
		t.Fatal(err)
	}

	w := cw.Watch(ctx, []string{"/feed"}, 0)
	defer w.Close()
	victim := cw.first() // the node the feed streams from

	var (
		mu    sync.Mutex
		seen  = map[string]int{}
		order []int64
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.Events() {
			if ev.Snapshot != nil {
				t.Errorf("unexpected snapshot at %d", ev.Snapshot.Offset)
				continue
			}
			mu.Lock()
			order = append(order, ev.Record.Offset)
			for _, c := range ev.Record.Changes {
				if c.Type == zkbridgev1.ChangeType_CHANGE_TYPE_CREATED {
					seen[c.Path]++
				}
			}
			mu.Unlock()
		}
	}()

	ok := map[string]bool{}
	ambiguous := map[string]bool{}
	const writes = 240
	for i := 0; i < writes; i++ {
		if i == writes/3 {
			stopWithin(t, servers[victim], 15*time.Second)
		}
		p := fmt.Sprintf("/feed/k%04d", i)
		if _, err := cwr.Put(ctx, p, []byte("v"), CreateOnly()); err != nil {
			if ctx.Err() != nil {
				t.Fatal(err)
			}
			t.Logf("put %s: %v", p, err)
			ambiguous[p] = true // the outcome may be unknown: seen at most once
			continue
		}
		ok[p] = true
	}
	if len(ok) < writes/2 {
		t.Fatalf("only %d of %d writes succeeded: %v", len(ok), writes, ambiguous)
	}
	if _, err := cwr.Put(ctx, "/feed/done", nil); err != nil {
		t.Fatal(err)
	}
	for {
		mu.Lock()
		finished := seen["/feed/done"] > 0
		mu.Unlock()
		if finished {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the feed never delivered /feed/done: %v", w.Err())
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.Close()
	<-done
	if w.Err() != nil {
		t.Fatalf("watcher error after Close: %v", w.Err())
	}
	for i := 1; i < len(order); i++ {
		if order[i] <= order[i-1] {
			t.Fatalf("offset %d after %d: not strictly increasing", order[i], order[i-1])
		}
	}
	for p := range ok {
		if seen[p] != 1 {
			t.Errorf("%s written, seen %d times", p, seen[p])
		}
	}
	for p, n := range seen {
		if n != 1 {
			t.Errorf("%s seen %d times", p, n)
		}
		if !ok[p] && !ambiguous[p] && p != "/feed/done" && p != "/feed" {
			t.Errorf("%s seen, never written", p)
		}
	}
	t.Logf("%d writes acknowledged, %d with an error; %d records seen", len(ok), len(ambiguous), len(order))
}

// A lease whose keep-alive stream is on the leader survives the leader's
// stop: heartbeats move to the other nodes and the new leader grants a
// full TTL.
func TestLeaseSurvivesLeaderFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nodes")
	}
	servers := startCluster(t, 3, 200*time.Millisecond, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	lead := leaderOf(t, servers, -1)
	c := dial(t, nativeAddrs(servers))
	c.cur.Store(int64(lead)) // register and keep alive through the leader
	l, err := c.Register(ctx, RegisterSpec{Group: "workers", MemberID: "w1", Payload: []byte("host-a"), TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if l.TTL() != 3*time.Second || l.Path() != "/workers/ids/w1" || l.Epoch() == 0 {
		t.Fatalf("lease %v %s %d", l.TTL(), l.Path(), l.Epoch())
	}
	time.Sleep(1500 * time.Millisecond) // a heartbeat or two through the leader
	stopWithin(t, servers[lead], 15*time.Second)
	newLead := leaderOf(t, servers, lead)
	// Three TTLs after the failover the lease is still alive.
	select {
	case <-l.Lost():
		t.Fatalf("lease lost across the failover: %v", l.Err())
	case <-time.After(9 * time.Second):
	}
	other := dial(t, []string{servers[newLead].NativeAddr()})
	got, err := other.Get(ctx, "/workers/ids/w1")
	if err != nil || got.Stat.EphemeralOwner != l.ID() || string(got.Data) != "host-a" {
		t.Fatalf("the registration after the failover: %+v %v", got, err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := other.Get(ctx, "/workers/ids/w1"); status.Code(err) != codes.NotFound {
		t.Fatalf("registration after Close: %v", err)
	}
	select {
	case <-l.Lost():
		t.Fatal("Close reported the lease lost")
	default:
	}
}

// Register conflicts carry the holder; a takeover ends the old lease,
// which its holder sees as lost.
func TestRegisterConflictTakeoverAndLoss(t *testing.T) {
	servers := startCluster(t, 1, 200*time.Millisecond, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dial(t, nativeAddrs(servers))
	l, err := c.Register(ctx, RegisterSpec{Group: "g", MemberID: "m", TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Register(ctx, RegisterSpec{Group: "g", MemberID: "m", TTL: 2 * time.Second})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.HolderEpoch != l.Epoch() || ce.HolderLease != l.ID() || ce.Path != "/g/ids/m" {
		t.Fatalf("second registration: %v (%+v)", err, ce)
	}
	if status.Code(err) != codes.AlreadyExists {
		t.Fatalf("conflict code %v", status.Code(err))
	}
	epoch := ce.HolderEpoch
	l2, err := c.Register(ctx, RegisterSpec{Group: "g", MemberID: "m", TTL: 2 * time.Second, ExpectedEpoch: &epoch})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close(ctx)
	select {
	case <-l.Lost():
		if !errors.Is(l.Err(), ErrLeaseExpired) {
			t.Fatalf("lost: %v", l.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the replaced lease was not reported lost")
	}
	if err := l.Close(ctx); err != nil {
		t.Fatalf("Close of a lost lease: %v", err)
	}
	// Heartbeats keep the new one past several TTLs.
	time.Sleep(5 * time.Second)
	if l2.Err() != nil {
		t.Fatalf("live lease lost: %v", l2.Err())
	}
	if ttl, err := c.Heartbeat(ctx, l2.ID()); err != nil || ttl != 2000 {
		t.Fatalf("heartbeat: %d %v", ttl, err)
	}
	_, err = c.Register(ctx, RegisterSpec{Group: "g", MemberID: "a/b", TTL: time.Second})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("bad member id: %v", err)
	}
}

// A feed that starts behind the compacted change log gets a snapshot
// first, then every change after it.
func TestWatchCompactionSnapshotResume(t *testing.T) {
	servers := startCluster(t, 1, 200*time.Millisecond, func(c *server.Config) { c.ChangeLogMaxRecords = 20 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dial(t, nativeAddrs(servers))
	for _, p := range []string{"/c", "/c/a", "/c/b", "/other"} {
		if _, err := c.Put(ctx, p, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 50; i++ {
		if _, err := c.Put(ctx, "/c/a", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	w := c.Watch(ctx, []string{"/c"}, 1)
	defer w.Close()
	ev := <-w.Events()
	if ev.Snapshot == nil {
		t.Fatalf("first event %+v, want a snapshot", ev)
	}
	var paths []string
	for _, n := range ev.Snapshot.Nodes {
		paths = append(paths, n.Path+"="+string(n.Data))
	}
	if strings.Join(paths, " ") != "/c=/c /c/a=49 /c/b=/c/b" {
		t.Fatalf("snapshot %v", paths)
	}
	if ev.Progress != ev.Snapshot.Offset || w.Offset() != ev.Snapshot.Offset {
		t.Fatalf("progress %d, offset %d, snapshot at %d", ev.Progress, w.Offset(), ev.Snapshot.Offset)
	}
	put, err := c.Put(ctx, "/c/b", []byte("after"))
	if err != nil {
		t.Fatal(err)
	}
	ev = <-w.Events()
	if ev.Record == nil || ev.Record.Offset != put.Stat.Mzxid || ev.Record.Offset <= ev.Progress-1 ||
		ev.Record.Changes[0].Path != "/c/b" || string(ev.Record.Changes[0].Data) != "after" {
		t.Fatalf("after the snapshot: %+v", ev)
	}
	// A bad prefix ends the feed with the server's error.
	bad := c.Watch(ctx, []string{"c"}, 0)
	for range bad.Events() {
	}
	if status.Code(bad.Err()) != codes.InvalidArgument {
		t.Fatalf("bad prefix: %v", bad.Err())
	}
}

// Allocators on two clients hand out unique ids under concurrency.
func TestIDAllocatorUniqueUnderConcurrency(t *testing.T) {
	servers := startCluster(t, 1, 200*time.Millisecond, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	allocs := []*IDAllocator{
		NewIDAllocator(dial(t, nativeAddrs(servers)), "/ids", 7),
		NewIDAllocator(dial(t, nativeAddrs(servers)), "/ids", 5),
	}
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(a *IDAllocator) {
			defer wg.Done()
			last := int64(-1)
			for i := 0; i < 40; i++ {
				id, err := a.Next(ctx)
				if err != nil {
					errs <- err
					return
				}
				if id <= last {
					errs <- fmt.Errorf("id %d after %d from one allocator", id, last)
					return
				}
				last = id
				mu.Lock()
				got = append(got, id)
				mu.Unlock()
			}
		}(allocs[g%2])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	for i := 1; i < len(got); i++ {
		if got[i] == got[i-1] {
			t.Fatalf("id %d handed out twice", got[i])
		}
	}
	if len(got) != 320 {
		t.Fatalf("%d ids", len(got))
	}
	// Every reserved id is either handed out or still in a block.
	first, _, err := allocs[0].c.AllocateID(ctx, "/ids", 1)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(got))+allocs[0].Remaining()+allocs[1].Remaining() != first {
		t.Fatalf("%d handed out + %d + %d remaining != counter %d", len(got), allocs[0].Remaining(), allocs[1].Remaining(), first)
	}
}

// KV calls, cutover policies and status through the client; writes move
// past a node that refuses connections; Dial says what to do when nothing
// answers.
func TestKVFailoverAndDialErrors(t *testing.T) {
	servers := startCluster(t, 1, 200*time.Millisecond, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dead := freeAddr(t)
	c := dial(t, []string{dead, servers[0].NativeAddr()})
	c.cur.Store(0) // try the dead address first
	put, err := c.Put(ctx, "/kv", []byte("1"))
	if err != nil || !put.Created {
		t.Fatalf("put past a dead node: %+v %v", put, err)
	}
	c.cur.Store(0)
	got, err := c.Get(ctx, "/kv", Serializable())
	if err != nil || string(got.Data) != "1" {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := c.Put(ctx, "/kv", []byte("2"), ExpectVersion(5)); status.Code(err) != codes.Aborted {
		t.Fatalf("put at a wrong version: %v", err)
	}
	if _, err := c.Put(ctx, "/kv", nil, CreateOnly()); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("create-only on an existing znode: %v", err)
	}
	if _, err := c.Put(ctx, "/kv/child", nil); err != nil {
		t.Fatal(err)
	}
	ls, err := c.List(ctx, "/kv")
	if err != nil || len(ls.Children) != 1 || ls.Children[0] != "child" {
		t.Fatalf("list: %+v %v", ls, err)
	}
	if err := c.Delete(ctx, "/kv/child", ExpectVersion(0)); err != nil {
		t.Fatal(err)
	}
	if err := c.SetCutoverPolicy(ctx, "/kv", zkbridgev1.CutoverMode_CUTOVER_MODE_READ_ONLY); err != nil {
		t.Fatal(err)
	}
	ps, err := c.ListCutoverPolicies(ctx)
	if err != nil || len(ps) != 1 || CutoverModeName(ps[0].Mode) != "read-only" {
		t.Fatalf("policies %+v %v", ps, err)
	}
	if _, err := c.Put(ctx, "/kv", nil); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("put under read-only: %v", err)
	}
	st, err := c.Status(ctx)
	if err != nil || st.Role != "leader" {
		t.Fatalf("status %+v %v", st, err)
	}
	if m, err := ParseCutoverMode("native"); err != nil || m != zkbridgev1.CutoverMode_CUTOVER_MODE_NATIVE {
		t.Fatal(m, err)
	}

	_, err = Dial(ctx, []string{freeAddr(t)})
	if err == nil || !strings.Contains(err.Error(), "--native-addr") {
		t.Fatalf("dial of nothing: %v", err)
	}
	if _, err := Dial(ctx, nil); err == nil {
		t.Fatal("dial without targets")
	}
	other := dial(t, nativeAddrs(servers), WithTenant("nosuch"))
	if _, err := other.Get(ctx, "/kv"); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("unknown tenant: %v", err)
	}
}
